/* agent-transcript viewer: the page's behaviour. The cards are drawn by the renderer above
   (render.js) from the lines the page carries (#at-data) and what replay says of them (#at-notes). */
(function () {
  "use strict";
  var doc = document, body = doc.body, root = doc.documentElement;
  var AT = window.AT = window.AT || {};
  function $(s, el) { return (el || doc).querySelector(s); }
  function $$(s, el) { return Array.prototype.slice.call((el || doc).querySelectorAll(s)); }

  /* the records: drawn from the page's data, before the end marker */
  var tailLines = [];
  function draw(lines, first, meta) {
    var r = new AT.Renderer({ notes: meta.notes || {}, grants: meta.grants, grantsLine: meta.grants_line });
    var end = $("#at-end"), frag = doc.createDocumentFragment();
    for (var k = 0; k < lines.length; k++) {
      if (!lines[k]) continue;
      frag.appendChild(r.render(lines[k], first ? first + k : 0));
    }
    if (end) end.parentNode.insertBefore(frag, end);
    return r;
  }
  /* a page's lines: in its own #at-data element, or (a folder's page) in its chunk script,
     which ran before this one (window.AT_CHUNK = [first line, String.raw`...`]) */
  var dataEl = $("#at-data"), chunk = window.AT_CHUNK;
  if (dataEl || chunk) {
    var meta = {};
    try { meta = JSON.parse(AT.island("at-notes") || "{}"); } catch (e) { meta = {}; }
    var text = dataEl ? dataEl.textContent : chunk[1];
    var first = dataEl ? parseInt(dataEl.getAttribute("data-first") || "0", 10) || 0 : chunk[0];
    window.AT_CHUNK = null;
    var lines = text.split("\n");
    lines.shift();  /* the newline after the element's start (or the template's) */
    if (lines.length && lines[lines.length - 1] === "") lines.pop();
    AT.renderer = draw(lines, first, meta);
    if (body.dataset.tail) tailLines = lines;
    if (location.hash.length > 1) {
      var target = doc.getElementById(decodeURIComponent(location.hash.slice(1)));
      if (target) target.scrollIntoView({ block: "start" });
    }
  }
  function recs() { return $$("article.rec"); }
  function visibleRecs() { return recs().filter(function (r) { return !r.classList.contains("hidden"); }); }

  /* theme */
  function store(k, v) { try { if (v === undefined) return localStorage.getItem(k); localStorage.setItem(k, v); } catch (e) { return null; } return null; }
  var theme = store("at-theme");
  if (theme === "dark" || theme === "light") root.classList.add(theme);
  function toggleTheme() {
    var dark = root.classList.contains("dark") || (!root.classList.contains("light") && window.matchMedia && matchMedia("(prefers-color-scheme: dark)").matches);
    root.classList.remove("dark", "light");
    root.classList.add(dark ? "light" : "dark");
    store("at-theme", dark ? "light" : "dark");
  }
  var themeButton = $("#theme");
  if (themeButton) themeButton.addEventListener("click", toggleTheme);

  /* raw JSON */
  var rawBox = $("#f-raw");
  if (rawBox) rawBox.addEventListener("change", function () { body.classList.toggle("show-raw", rawBox.checked); });

  /* tool calls paired with their dispatch, settle and result */
  function pair() {
    var results = {}, dispatches = {}, settles = {}, messages = {};
    recs().forEach(function (r) {
      var d = r.dataset;
      if (d.type === "message" && d.role === "tool" && d.call) results[d.call] = r;
      if (r.classList.contains("k-dispatch") && d.call) dispatches[d.call] = r;
      if (r.classList.contains("k-settle") && d.op) settles[d.op] = r;
    });
    $$("li.call[data-call]").forEach(function (li) {
      var id = li.dataset.call, state = $(".state", li);
      var msg = li.closest("article");
      if (msg) messages[id] = msg;
      if (!state || state.dataset.done) return;
      var html = [];
      var disp = dispatches[id];
      var res = results[id];
      if (disp) {
        var st = disp.dataset.state;
        var settle = settles[disp.dataset.op];
        if (settle) { st = settle.dataset.state; }
        var elsewhere = !settle && disp.dataset.settled;  /* settled on another page */
        var cls = st === "completed" || elsewhere ? "ok" : (st === "outcome-unknown" ? "warn" : "bad");
        var chip = doc.createElement("a");
        chip.className = "chip " + cls; chip.href = elsewhere ? "#L" + disp.dataset.settled : "#" + (settle || disp).id;
        chip.textContent = elsewhere ? "settled at line " + disp.dataset.settled
          : (st || "dispatched") + (settle && settle.dataset.duration ? " · " + settle.dataset.duration : "") + (settle ? "" : " · never settled");
        html.push(chip);
        if (!settle && disp.dataset.state) li.classList.add("pending-call");
        if (st && st !== "completed") msg && msg.setAttribute("data-error", "1");
      }
      if (res) {
        var a = doc.createElement("a");
        a.className = "chip"; a.href = "#" + res.id; a.textContent = "→ result, line " + res.dataset.line;
        html.push(a);
      }
      html.forEach(function (el) { state.appendChild(doc.createTextNode(" ")); state.appendChild(el); });
      state.dataset.done = "1";
    });
    $$("a.callref[data-call]").forEach(function (a) {
      var m = messages[a.dataset.call];
      if (m && !a.getAttribute("href")) a.href = "#" + m.id;
    });
  }

  /* filters */
  var fRole = $("#f-role"), fTool = $("#f-tool"), fErr = $("#f-errors");
  function fillTools() {
    if (!fTool) return;
    var have = {};
    $$("option", fTool).forEach(function (o) { have[o.value] = 1; });
    recs().forEach(function (r) {
      (r.dataset.tool || "").split(" ").forEach(function (t) {
        if (t && !have[t]) { have[t] = 1; var o = doc.createElement("option"); o.textContent = t; o.value = t; fTool.appendChild(o); }
      });
    });
  }
  function isError(r) {
    return r.classList.contains("error") || r.classList.contains("pending") || r.hasAttribute("data-error") || !!$(".refusal", r);
  }
  function applyFilters() {
    var role = fRole ? fRole.value : "", tool = fTool ? fTool.value : "", err = fErr ? fErr.checked : false;
    recs().forEach(function (r) {
      var ok = true;
      if (role && r.dataset.role !== role) ok = false;
      if (tool && (" " + (r.dataset.tool || "") + " ").indexOf(" " + tool + " ") < 0) ok = false;
      if (err && !isError(r)) ok = false;
      r.classList.toggle("hidden", !ok);
    });
  }
  [fRole, fTool, fErr].forEach(function (el) { if (el) el.addEventListener("change", applyFilters); });

  /* find */
  var find = $("#find"), findCount = $("#find-count"), hits = [], hitAt = -1;
  function runFind() {
    var q = find.value.trim().toLowerCase();
    var rows = $$("table.picker tr.row");
    if (rows.length) {
      var n = 0;
      rows.forEach(function (tr) { var ok = !q || tr.textContent.toLowerCase().indexOf(q) >= 0; tr.classList.toggle("hidden", !ok); if (ok) n++; });
      findCount.textContent = q ? n + " found" : "";
      return;
    }
    hits.forEach(function (r) { r.classList.remove("hit", "hit-current"); });
    hits = []; hitAt = -1;
    if (q) {
      visibleRecs().forEach(function (r) {
        var t = r.dataset.text;
        if (t === undefined) { t = (($(".body", r) || r).textContent || "").toLowerCase(); r.dataset.text = t; }
        if (t.indexOf(q) >= 0) { hits.push(r); r.classList.add("hit"); }
      });
    }
    findCount.textContent = q ? hits.length + " found" : "";
  }
  function nextHit(step) {
    if (!hits.length) return;
    if (hitAt >= 0) hits[hitAt].classList.remove("hit-current");
    hitAt = (hitAt + step + hits.length) % hits.length;
    var r = hits[hitAt];
    r.classList.add("hit-current");
    $$("details.fold", r).forEach(function (d) { d.open = true; });
    r.scrollIntoView({ block: "center" }); r.focus({ preventScroll: true });
    findCount.textContent = (hitAt + 1) + " of " + hits.length;
  }
  var findTimer = null;
  if (find) {
    find.addEventListener("input", function () { clearTimeout(findTimer); findTimer = setTimeout(runFind, 150); });
    find.addEventListener("keydown", function (e) {
      if (e.key === "Enter") { e.preventDefault(); clearTimeout(findTimer); if (!hits.length) runFind(); nextHit(e.shiftKey ? -1 : 1); }
      if (e.key === "Escape") { find.blur(); }
    });
  }

  /* keyboard */
  var current = null;
  function move(step) {
    var list = visibleRecs();
    if (!list.length) return;
    var i = current ? list.indexOf(current) : -1;
    if (i < 0) {
      var top = window.scrollY;
      i = step > 0 ? -1 : list.length;
      for (var k = 0; k < list.length; k++) { if (list[k].offsetTop >= top + 40) { i = step > 0 ? k - 1 : k; break; } }
    }
    i = Math.max(0, Math.min(list.length - 1, i + step));
    current = list[i];
    current.focus({ preventScroll: true });
    current.scrollIntoView({ block: "nearest" });
  }
  doc.addEventListener("keydown", function (e) {
    var t = e.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA") || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "j") move(1);
    else if (e.key === "k") move(-1);
    else if (e.key === "/") { e.preventDefault(); if (find) find.focus(); }
    else if (e.key === "t") toggleTheme();
    else if (e.key === "o" && current) { var ds = $$("details", current); var open = !ds.every(function (d) { return d.open; }); ds.forEach(function (d) { d.open = open; }); }
    else if (e.key === "r" && rawBox) { rawBox.checked = !rawBox.checked; body.classList.toggle("show-raw", rawBox.checked); }
    else return;
  });
  doc.addEventListener("focusin", function (e) { var r = e.target && e.target.closest && e.target.closest("article.rec"); if (r) current = r; });

  /* a folder of pages: links to lines on other pages, and search over every page */
  var pages = null;
  AT.setPages = function (ranges) { pages = ranges; };
  function pageOf(line) {
    if (!pages) return 0;
    for (var i = pages.length - 1; i >= 0; i--) if (pages[i][0] <= line) return i + 1;
    return 1;
  }
  function pageName(n) { var s = String(n); while (s.length < 6) s = "0" + s; return s; }
  doc.addEventListener("click", function (e) {
    var a = e.target && e.target.closest && e.target.closest("a[href^='#L']");
    if (!a || !pages) return;
    var id = a.getAttribute("href").slice(1);
    if (doc.getElementById(id)) return;
    var n = pageOf(parseInt(id.slice(1), 10));
    if (n) { e.preventDefault(); location.href = (body.dataset.base || "") + "p/" + pageName(n) + ".html#" + id; }
  });
  var searchButton = $("#search-all");
  if (searchButton) {
    var status = $("#search-status"), list = $("#search-hits"), query = "", found = 0, total = parseInt(body.dataset.pages || "0", 10);
    /* each page's lines are in c/NNNNNN.js, a script (file:// cannot fetch): loaded one after the other */
    var gotChunk = function (n) {
      var c = window.AT_CHUNK || [1, ""], first = c[0], lines = c[1].split("\n");
      window.AT_CHUNK = null;
      for (var k = 0; k < lines.length && found < 200; k++) {
        var at = lines[k].toLowerCase().indexOf(query);
        if (at < 0) continue;
        found++;
        var li = doc.createElement("li"), a = doc.createElement("a"), line = first + k - 1;
        a.href = "p/" + pageName(n) + ".html#L" + line;
        a.textContent = AT.visible("page " + n + ", line " + line + ": " + lines[k].slice(Math.max(0, at - 40), at + 80));
        li.appendChild(a); list.appendChild(li);
      }
      status.textContent = "page " + n + " of " + total + ", " + found + " found";
      if (n < total && found < 200) load(n + 1); else status.textContent = found + " found in " + n + " page" + (n === 1 ? "" : "s");
    };
    var load = function (n) {
      var s = doc.createElement("script");
      s.src = "c/" + pageName(n) + ".js";
      s.onload = function () { s.remove(); gotChunk(n); };
      s.onerror = function () { status.textContent = "page " + n + " could not be read"; };
      doc.head.appendChild(s);
    };
    searchButton.addEventListener("click", function () {
      query = (find.value || "").trim().toLowerCase();
      if (!query) { status.textContent = "type what to find first"; return; }
      list.textContent = ""; found = 0;
      if (total) load(1);
    });
  }

  /* serve: open at the tail, follow a run still being written */
  function atBottom() { return window.innerHeight + window.scrollY >= doc.body.scrollHeight - 80; }
  if (body.dataset.tail) {
    window.scrollTo(0, doc.body.scrollHeight);
  }
  /* serve's tail page: the verdict, the calls never settled and the end of the run, once the file is read */
  function summary(sec, d) {
    sec.textContent = "";
    d.summary.forEach(function (x) {
      var e = doc.createElement(x[0].indexOf("verdict") === 0 ? "div" : "p");
      e.className = x[0];
      if (x[0].indexOf("verdict") === 0) { e.id = "verdict"; var b = doc.createElement("b"); b.textContent = "check"; e.appendChild(b); e.appendChild(doc.createTextNode(" " + AT.visible(x[1].replace(/^check /, "")))); }
      else e.textContent = AT.visible(x[1]);
      sec.appendChild(e);
    });
    var pending = d.pending || [];
    function links(parent) {
      pending.slice(0, 50).forEach(function (p, k) {
        if (k) parent.appendChild(doc.createTextNode(", "));
        var a = doc.createElement("a"); a.href = "#" + p[0]; a.textContent = AT.visible(p[1] + " (" + p[3] + ")");
        parent.appendChild(a);
      });
    }
    if (pending.length) {
      var box = doc.createElement("div"), b = doc.createElement("b");
      box.className = "pending-list"; b.textContent = pending.length + " tool call" + (pending.length !== 1 ? "s" : "") + " never settled: ";
      box.appendChild(b); links(box); sec.appendChild(box);
    }
    if (pending.length || d.torn) {
      var end = doc.createElement("div"), t = doc.createElement("b");
      end.className = "ended"; end.id = "ended"; end.setAttribute("role", "note");
      t.textContent = "The run ended here."; end.appendChild(t);
      var bits = [];
      if (d.torn) bits.push(d.torn);
      end.appendChild(doc.createTextNode(" " + bits.join("; ") + (pending.length ? (bits.length ? "; " : "") + pending.length + " tool call" + (pending.length !== 1 ? "s" : "") + " never settled: " : "")));
      links(end);
      var mark = $("#at-end");
      mark.parentNode.insertBefore(end, mark.nextSibling);
    }
  }

  if (body.dataset.events && window.EventSource) {
    var endMark = $("#at-end"), badge = $("#live");
    var es = new EventSource(body.dataset.events);
    /* what replay says of the tail, once the server has read the file: the cards are drawn again with it */
    es.addEventListener("notes", function (e) {
      var d = JSON.parse(e.data), follow = atBottom();
      $$("article.rec").forEach(function (a) { if (!a.classList.contains("fresh-live")) a.remove(); });
      var live = $$("article.rec");
      live.forEach(function (a) { a.remove(); });
      AT.renderer = draw(tailLines, d.first, d);
      live.forEach(function (a) { endMark.parentNode.insertBefore(a, endMark); });
      body.dataset.first = String(d.first);
      var wait = $("#summary-wait");
      if (wait && d.summary) summary(wait.parentNode, d);
      pair(); fillTools(); applyFilters();
      if (follow) window.scrollTo(0, doc.body.scrollHeight);
    });
    es.addEventListener("rec", function (e) {
      var follow = atBottom(), d = JSON.parse(e.data), ended = $("#ended");
      if (ended) ended.remove();  /* the run goes on */
      var added = (AT.renderer || new AT.Renderer({})).render(d.raw, d.line);
      added.classList.add("fresh", "fresh-live");
      endMark.parentNode.insertBefore(added, endMark);
      pair(); fillTools(); applyFilters();
      if (follow) window.scrollTo(0, doc.body.scrollHeight);
      if (badge) badge.textContent = "live · line " + d.line;
    });
    es.addEventListener("reset", function () { es.close(); location.reload(); });
    es.addEventListener("open", function () { if (badge) badge.textContent = "live"; });
    es.addEventListener("error", function () { if (badge) badge.textContent = "reconnecting…"; });
  }

  /* times written by Python (the picker's, the summary's) as a person reads them, exact UTC on hover */
  $$("time[data-human]").forEach(function (t) {
    var h = AT.humanTime(t.getAttribute("datetime"));
    t.textContent = h.text;
    if (h.title) t.title = h.title;
  });

  pair();
  fillTools();
})();
