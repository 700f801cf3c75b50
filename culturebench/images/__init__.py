"""The image stage shared by every builder with images: fetching into a content-addressed
cache, safe decoding, licences, perceptual hashes and near-duplicate search."""
