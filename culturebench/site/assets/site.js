/* culturebench site: sortable tables, leaderboard filters, the samples page. No libraries,
   no network: the samples come from a script the page loads (window.CB_SAMPLES). */
(function () {
  "use strict";

  function cellValue(cell) {
    var key = cell.getAttribute("data-sort");
    if (key === null) { key = cell.textContent.trim(); }
    var number = parseFloat(key);
    return { text: key, number: isNaN(number) || !/^[-+0-9.eE]+$/.test(key) ? null : number };
  }

  function sortTable(table, column, th) {
    var body = table.tBodies[0];
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (x, y) {
      var a = cellValue(x.cells[column]), b = cellValue(y.cells[column]);
      var order;
      if (a.number !== null && b.number !== null) { order = a.number - b.number; }
      else if (a.number !== null) { order = -1; }
      else if (b.number !== null) { order = 1; }
      else { order = a.text.localeCompare(b.text); }
      return ascending ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }

  function sortable() {
    document.querySelectorAll("table.sortable").forEach(function (table) {
      if (!table.tHead) { return; }
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
        var button = th.querySelector("button");
        if (button) { button.addEventListener("click", function () { sortTable(table, column, th); }); }
      });
    });
  }

  function leaderboardFilters() {
    var form = document.querySelector("form[data-filters=leaderboard]");
    if (!form) { return; }
    var table = document.getElementById("leaderboard");
    function apply() {
      var dataset = form.elements.dataset.value, language = form.elements.language.value, kind = form.elements.kind.value;
      var shown = 0, total = table.tBodies[0].rows.length;
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        var ok = (!dataset || row.dataset.dataset === dataset) &&
          (!language || (" " + row.dataset.language + " ").indexOf(" " + language + " ") >= 0) &&
          (!kind || row.dataset.kind === kind);
        row.hidden = !ok;
        if (ok) { shown += 1; }
      });
      document.querySelectorAll("table.printed-table").forEach(function (t) {
        t.hidden = Boolean(dataset) && t.dataset.dataset !== dataset;
      });
      form.elements.shown.value = shown + " of " + total + " runs";
    }
    form.addEventListener("change", apply);
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    apply();
  }

  var PAGE = 50;

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = text; }
    if (cls) { node.className = cls; }
    return node;
  }

  function samples(jsonl) {
    var data = window.CB_SAMPLES;
    var form = document.getElementById("sample-filters");
    var body = document.querySelector("#samples tbody");
    var count = document.getElementById("sample-count");
    var pageOf = document.getElementById("page-of");
    if (!data || !form || !body) { return; }
    var col = {};
    data.columns.forEach(function (name, i) { col[name] = i; });
    var rows = data.rows, matching = rows, page = 0;

    function filter() {
      var lang = form.elements.lang.value, group = form.elements.group.value;
      var state = form.elements.status.value, q = form.elements.q.value.trim().toLowerCase();
      matching = rows.filter(function (r) {
        if (lang && r[col.lang] !== lang) { return false; }
        if (group && r[col.group] !== group) { return false; }
        if (state && r[col.status] !== state) { return false; }
        if (q) {
          var text = (r[col.id] + "\n" + r[col.prompt] + "\n" + r[col.output] + "\n" + r[col.read]).toLowerCase();
          if (text.indexOf(q) < 0) { return false; }
        }
        return true;
      });
      page = 0;
      render();
    }

    function render() {
      var pages = Math.max(1, Math.ceil(matching.length / PAGE));
      page = Math.min(Math.max(page, 0), pages - 1);
      body.textContent = "";
      matching.slice(page * PAGE, (page + 1) * PAGE).forEach(function (r) {
        var tr = document.createElement("tr");
        tr.className = "status-" + r[col.status];
        var line = el("td");
        var link = el("a", String(r[col.line]));
        link.href = jsonl + "#L" + r[col.line];
        link.title = "line " + r[col.line] + " of samples.jsonl";
        line.appendChild(link);
        tr.appendChild(line);
        tr.appendChild(el("td", r[col.id]));
        tr.appendChild(el("td", r[col.lang]));
        tr.appendChild(el("td", r[col.group]));
        var prompt = el("td", null, "text");
        var details = el("details");
        var flat = r[col.prompt].replace(/\s+/g, " ");
        var summary = el("summary", flat.slice(0, 120) + (flat.length > 120 ? "…" : ""));
        details.appendChild(summary);
        details.appendChild(el("pre", r[col.prompt]));
        if (r[col.fields]) { details.appendChild(el("pre", r[col.fields], "fields")); }
        prompt.appendChild(details);
        var images = r[col.images] || [];
        if (images.length) {
          var strip = el("div", null, "thumbs");
          images.forEach(function (src, i) {
            var img = el("img");
            img.src = "../" + src;
            img.alt = "image " + (i + 1) + " of the prompt of " + r[col.id];
            strip.appendChild(img);
          });
          prompt.appendChild(strip);
        }
        tr.appendChild(prompt);
        tr.appendChild(el("td", r[col.output], "text answer"));
        tr.appendChild(el("td", r[col.read], "read"));
        tr.appendChild(el("td", r[col.score] === null ? "-" : Number(r[col.score]).toFixed(3), "num"));
        tr.appendChild(el("td", r[col.status], "status"));
        body.appendChild(tr);
      });
      count.value = matching.length.toLocaleString("en") + " of " + rows.length.toLocaleString("en") + " samples";
      pageOf.textContent = "page " + (page + 1) + " of " + pages;
    }

    form.addEventListener("change", filter);
    form.addEventListener("input", function (event) { if (event.target.name === "q") { filter(); } });
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    document.querySelectorAll(".pager button").forEach(function (button) {
      button.addEventListener("click", function () {
        page += button.getAttribute("data-page") === "next" ? 1 : -1;
        render();
      });
    });
    filter();
  }

  window.culturebench = { samples: samples };
  sortable();
  leaderboardFilters();
  // The samples page loads its data script after this one: start once the page is parsed (no
  // inline script: the Content-Security-Policy allows only the site's own files).
  document.addEventListener("DOMContentLoaded", function () {
    var table = document.getElementById("samples");
    if (table && table.getAttribute("data-jsonl")) { samples(table.getAttribute("data-jsonl")); }
  });
})();
