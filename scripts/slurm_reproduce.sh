#!/bin/bash
# One paper's grid for one model on a Slurm array: task K of N runs shard K/N of every cell
# (cut by dish or question, so bootstrap units stay whole). Submit, then merge and report:
#   sbatch --array=1-4 scripts/slurm_reproduce.sh wwd meta-llama/Meta-Llama-3-8B-Instruct dist/wwd/1.1.0
#   culturebench eval merge out/reproduce/wwd-shard-{1,2,3,4} --out out/reproduce/wwd
#   culturebench eval reproduce wwd --backend vllm --model meta-llama/Meta-Llama-3-8B-Instruct \
#     --local dist/wwd/1.1.0 --out out/reproduce/wwd      # no new work: writes paper/
# A killed or preempted task resumes where it stopped when resubmitted (--requeue is safe).
#SBATCH --job-name=culturebench-reproduce
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=8
#SBATCH --time=12:00:00
#SBATCH --requeue
set -euo pipefail
dataset=$1 model=$2 release=$3
k=${SLURM_ARRAY_TASK_ID:?submit with --array=1-N} n=${SLURM_ARRAY_TASK_COUNT:?}
culturebench eval reproduce "$dataset" --backend vllm --model "$model" --model-arg dtype=bfloat16 \
  --local "$release" --shard "$k/$n" --out "out/reproduce/$dataset-shard-$k"
