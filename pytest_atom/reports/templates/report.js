// Sorting and filtering of the summary table; plain JavaScript, no network.
(function () {
  "use strict";
  var table = document.getElementById("summary-table");
  if (!table) { return; }
  var body = table.tBodies[0];

  function key(row, index, numeric) {
    var text = row.cells[index].getAttribute("data-sort") || row.cells[index].textContent;
    if (!numeric) { return text.toLowerCase(); }
    var value = parseFloat(text);
    return isNaN(value) ? -Infinity : value;
  }

  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
    th.tabIndex = 0;
    function sort() {
      var numeric = th.getAttribute("data-type") === "num";
      var ascending = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (other) {
        other.removeAttribute("aria-sort");
      });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a, index, numeric), y = key(b, index, numeric);
        var order = x < y ? -1 : x > y ? 1 : 0;
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    }
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sort(); }
    });
  });

  // A passing spec starts folded: following a link to it (or into it) unfolds it.
  function unfold() {
    var target = location.hash && document.getElementById(location.hash.slice(1));
    for (var node = target; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") { node.open = true; }
    }
    var body = target && target.querySelector("details.spec-body");
    if (body) { body.open = true; }
  }
  window.addEventListener("hashchange", unfold);
  unfold();

  var boxes = document.querySelectorAll("input.outcome-filter");
  function filter() {
    var shown = {};
    Array.prototype.forEach.call(boxes, function (box) { shown[box.value] = box.checked; });
    var visible = 0, total = 0;
    document.querySelectorAll("#summary-table tbody tr, section.spec").forEach(function (node) {
      var on = shown[node.getAttribute("data-outcome")] !== false;
      node.hidden = !on;
      if (node.tagName === "TR") { total += 1; visible += on ? 1 : 0; }
    });
    document.getElementById("shown-count").textContent =
      visible === total ? "" : visible + " of " + total + " shown";
  }
  Array.prototype.forEach.call(boxes, function (box) { box.addEventListener("change", filter); });
  filter();
})();
