/* agent-transcript viewer: the renderer. Every record is drawn here from its JSON line, with DOM
   calls only (createElement, textContent, setAttribute): no transcript text is ever parsed as HTML.
   What replay says of a record (settled, elided, compacted away, pending, ...) comes from Python as
   "notes", keyed by line number. */
(function () {
  "use strict";
  var doc = document;
  var AT = window.AT = window.AT || {};

  var FOLD_CHARS = 1200, FOLD_LINES = 14, MAX_BLOCK = 256 * 1024, MAX_RAW = 16 * 1024, MAX_MARKDOWN = 64 * 1024;
  var EXCERPT_CHARS = 160, CUT_LIST = 60, WINDOW = 4000;
  var MESSAGE_KEYS = { role: 1, content: 1, name: 1, tool_calls: 1, tool_call_id: 1, sticky: 1, sysprompt: 1, depth: 1 };
  var CUT_KEY = "\u0000agent-transcript-cut";

  /* -- text made safe and visible */
  var INVISIBLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]|[\ud800-\udbff](?![\udc00-\udfff])|(?:[^\ud800-\udbff]|^)[\udc00-\udfff]/g;
  function hex4(c) { var s = c.toString(16); while (s.length < 4) s = "0" + s; return s; }
  function visible(v) {
    v = String(v).replace(/\r\n/g, "\n");
    return v.replace(INVISIBLE, function (m) {
      var pre = "";
      if (m.length === 2 && m.charCodeAt(1) >= 0xdc00 && m.charCodeAt(1) <= 0xdfff && !(m.charCodeAt(0) >= 0xd800 && m.charCodeAt(0) <= 0xdbff)) { pre = m[0]; m = m[1]; }
      var c = m.charCodeAt(0);
      if (c < 0x20) return pre + String.fromCharCode(0x2400 + c);
      if (c === 0x7f) return pre + "\u2421";
      return pre + "\\u" + hex4(c);
    });
  }
  function el(tag, cls, txt) {
    var e = doc.createElement(tag);
    if (cls) e.className = cls;
    if (txt !== undefined && txt !== null) e.textContent = visible(txt);
    return e;
  }
  function add(parent) { for (var i = 1; i < arguments.length; i++) { var c = arguments[i]; if (c === null || c === undefined || c === "") continue; parent.appendChild(typeof c === "string" ? doc.createTextNode(visible(c)) : c); } return parent; }
  function num(n) { return Number(n).toLocaleString("en-US"); }
  function utf8len(s) { var n = 0; for (var i = 0; i < s.length; i++) { var c = s.charCodeAt(i); if (c < 0x80) n += 1; else if (c < 0x800) n += 2; else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) { var d = s.charCodeAt(i + 1); if (d >= 0xdc00 && d <= 0xdfff) { n += 4; i++; } else n += 3; } else n += 3; } return n; }
  function sizeText(n) {
    if (n < 1024) return num(n) + " B";
    if (n < 1024 * 1024) return (n / 1024).toLocaleString("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 }) + " KB";
    return (n / (1024 * 1024)).toLocaleString("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 }) + " MB";
  }
  /* A time as a person reads it, in the reader's own zone: "today 11:00", "yesterday 18:02",
     "3 days ago" (within a week), "Mon 4 Aug" (this year), "4 Aug 2025"; and the exact UTC for a
     hover title. An ISO string that is no time is given back as it is. */
  var MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  var DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
  function pad2(n) { return (n < 10 ? "0" : "") + n; }
  function humanTime(iso, now) {
    var d = new Date(String(iso));
    if (!iso || isNaN(d.getTime())) return { text: String(iso || "-"), title: "" };
    now = now || new Date();
    var title = d.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC").replace(/Z$/, " UTC");
    var day = function (x) { return new Date(x.getFullYear(), x.getMonth(), x.getDate()).getTime(); };
    var days = Math.round((day(now) - day(d)) / 86400000), hm = pad2(d.getHours()) + ":" + pad2(d.getMinutes());
    var text;
    if (days === 0) text = "today " + hm;
    else if (days === 1) text = "yesterday " + hm;
    else if (days > 1 && days < 7) text = days + " days ago";
    else if (d.getFullYear() === now.getFullYear()) text = DAYS[d.getDay()] + " " + d.getDate() + " " + MONTHS[d.getMonth()] + " " + hm;
    else text = d.getDate() + " " + MONTHS[d.getMonth()] + " " + d.getFullYear();
    return { text: text, title: title };
  }
  function timeEl(iso) {
    var h = humanTime(iso), t = el("time", null, h.text);
    t.setAttribute("datetime", visible(String(iso)));
    if (h.title) t.title = h.title;
    return t;
  }
  function seconds(d) { return d < 1 ? Math.round(d * 1000) + " ms" : d.toFixed(2) + " s"; }
  function isCut(v) { return v !== null && typeof v === "object" && !Array.isArray(v) && typeof v[CUT_KEY] === "string"; }
  function str(v) { return isCut(v) ? v[CUT_KEY] : v; }
  /* A JSON value on one line, readably spaced (Python's separators=(", ", ": ")). */
  function compact(v, indent, depth) {
    depth = depth || 0;
    if (isCut(v)) v = v[CUT_KEY];
    if (v === null || typeof v !== "object") return JSON.stringify(v === undefined ? null : v);
    var nl = indent ? "\n" + new Array(depth + 2).join(" ") : "", end = indent ? "\n" + new Array(depth + 1).join(" ") : "";
    var sep = indent ? "," : ", ";
    if (Array.isArray(v)) {
      if (!v.length) return "[]";
      return "[" + nl + v.map(function (x) { return compact(x, indent, depth + 1); }).join(sep + nl) + end + "]";
    }
    var keys = Object.keys(v);
    if (!keys.length) return "{}";
    return "{" + nl + keys.map(function (k) { return JSON.stringify(k) + ": " + compact(v[k], indent, depth + 1); }).join(sep + nl) + end + "}";
  }
  function contentText(c) {
    if (c === null || c === undefined) return null;
    if (typeof c === "string" || isCut(c)) return str(c);
    if (Array.isArray(c)) {
      return c.map(function (part) {
        if (part && typeof part === "object" && !Array.isArray(part) && !isCut(part)) {
          if (part.type === "text" && (typeof part.text === "string" || isCut(part.text))) return str(part.text);
          return "[" + (part.type || "part") + "]";
        }
        return compact(part);
      }).join("\n");
    }
    return compact(c);
  }
  function callParts(call) {
    if (!call || typeof call !== "object" || Array.isArray(call)) return ["?", "?", compact(call)];
    var fn = call["function"] && typeof call["function"] === "object" ? call["function"] : {};
    var args = fn.arguments;
    if (typeof args === "string") { try { args = compact(JSON.parse(args)); } catch (e) { /* shown as written */ } }
    else args = compact(args);
    return [String(call.id === undefined ? "?" : call.id), String(fn.name === undefined ? "?" : fn.name), String(str(args))];
  }
  function safeUrl(u) {
    u = u.trim();
    return /^https?:\/\/[^\s<>"'`\\]+$/i.test(u) ? u : null;
  }
  var PLAIN_ID = /^[A-Za-z0-9_.:-]{1,128}$/;
  function anchor(id, note) { if (note && note.a) return note.a; return PLAIN_ID.test(id) ? "e-" + id : "e-x" + id.length; }

  /* -- a small Markdown: fences, headings, lists, paragraphs, code spans, bold, emphasis, http(s) links */
  function link(label, url) {
    var ok = safeUrl(url);
    if (!ok) return doc.createTextNode("[" + label + "](" + url + ")");
    var a = el("a", null, label);
    a.setAttribute("href", ok); a.setAttribute("rel", "noopener noreferrer nofollow");
    return a;
  }
  function emphasis(raw, out) {
    var re = /\*\*([^*\n]+)\*\*|(^|[^*\w])\*([^*\n]+)\*(?![*\w])/g, pos = 0, m;
    while ((m = re.exec(raw))) {
      if (m[1] !== undefined) { out.appendChild(doc.createTextNode(raw.slice(pos, m.index))); out.appendChild(el("strong", null, m[1])); }
      else { out.appendChild(doc.createTextNode(raw.slice(pos, m.index) + m[2])); out.appendChild(el("em", null, m[3])); }
      pos = re.lastIndex;
    }
    out.appendChild(doc.createTextNode(raw.slice(pos)));
  }
  function autolinks(raw, out) {
    var re = /(^|[^"=\/\w])(https?:\/\/[^\s<>"'`)\]]+)/g, pos = 0, m;
    while ((m = re.exec(raw))) {
      emphasis(raw.slice(pos, m.index) + m[1], out);
      out.appendChild(link(m[2], m[2]));
      pos = re.lastIndex;
    }
    emphasis(raw.slice(pos), out);
  }
  function links(raw, out) {
    var re = /\[([^\]\n]{1,500})\]\(([^)\s]{1,2000})\)/g, pos = 0, m;
    while ((m = re.exec(raw))) { autolinks(raw.slice(pos, m.index), out); out.appendChild(link(m[1], m[2])); pos = re.lastIndex; }
    autolinks(raw.slice(pos), out);
  }
  function inline(raw, out) {
    var re = /`([^`\n]+)`/g, pos = 0, m;
    while ((m = re.exec(raw))) { links(raw.slice(pos, m.index), out); out.appendChild(el("code", null, m[1])); pos = re.lastIndex; }
    links(raw.slice(pos), out);
    return out;
  }
  function blocks(raw, out) {
    var para = [], items = [];
    function flush() {
      if (para.length) { var p = el("p"); para.forEach(function (t, k) { if (k) p.appendChild(el("br")); inline(t, p); }); out.appendChild(p); para = []; }
      if (items.length) { var ul = el("ul"); items.forEach(function (t) { ul.appendChild(inline(t, el("li"))); }); out.appendChild(ul); items = []; }
    }
    raw.split("\n").forEach(function (line) {
      var s = line.trim(), h = /^(#{1,6})\s+(.*)$/.exec(s), it = /^[-*+]\s+(.*)$/.exec(s) || /^\d{1,9}[.)]\s+(.*)$/.exec(s);
      if (!s) flush();
      else if (h) { flush(); out.appendChild(inline(h[2], el("h" + Math.min(6, h[1].length + 2)))); }
      else if (it) { if (para.length) flush(); items.push(it[1]); }
      else { if (items.length) flush(); para.push(line); }
    });
    flush();
  }
  function markdown(value) {
    var out = doc.createDocumentFragment(), re = /^```([^\n`]*)\n([\s\S]*?)(?:\n```[ \t]*$|(?![\s\S]))/gm, pos = 0, m;
    while ((m = re.exec(value))) {
      blocks(value.slice(pos, m.index), out);
      var pre = el("pre", "code"), lang = m[1].trim();
      if (lang) pre.setAttribute("data-lang", lang.slice(0, 40));
      pre.appendChild(el("code", null, m[2]));
      out.appendChild(pre);
      pos = re.lastIndex;
      if (m[0].length === 0) re.lastIndex++;
    }
    blocks(value.slice(pos), out);
    return out;
  }
  AT.markdown = markdown;

  /* -- pieces of a card */
  function chip(label, cls, title) { var s = el("span", "chip " + cls, label); if (title) s.title = visible(title); return s; }
  function lineLink(line, label) { if (!line) return null; var a = el("a", "lref", label || "line " + line); a.setAttribute("href", "#L" + line); return a; }
  function goneChip(line, label) { var a = el("a", "chip gone", label); a.setAttribute("href", "#L" + line); return a; }
  /* A text block: Markdown or preformatted, folded when long, cut at MAX_BLOCK. */
  function block(value, o) {
    o = o || {};
    var whole = o.size !== undefined ? o.size : utf8len(value), cut = null;
    if (value.length > MAX_BLOCK || (o.size !== undefined && o.size > utf8len(value))) {
      value = value.slice(0, MAX_BLOCK);
      cut = el("p", "cut-note", "\u2026 " + sizeText(whole - utf8len(value)) + " more not shown here" + (o.line ? "; the whole text is line " + o.line + " of the file" : "") + ".");
    }
    var body;
    if (o.md && value.length <= MAX_MARKDOWN) { body = el("div", "md" + (o.cls ? " " + o.cls : "")); body.appendChild(markdown(visible(value))); }
    else body = el("pre", "txt" + (o.cls ? " " + o.cls : ""), value);
    var lines = value.split("\n").length;
    if (value.length > FOLD_CHARS || lines > FOLD_LINES) {
      var d = el("details", "fold");
      add(d, el("summary", null, num(lines) + " lines, " + sizeText(whole)), body, cut);
      return d;
    }
    var f = doc.createDocumentFragment();
    add(f, body, cut);
    return f;
  }
  function textOf(v) { return typeof v === "string" || isCut(v) ? str(v) : compact(v); }
  function blockOf(v, o) {
    o = o || {};
    if (isCut(v)) o.size = v.bytes;
    return block(textOf(v), o);
  }

  /* -- the renderer: records in file order, with the little it remembers between them */
  function Renderer(opts) {
    opts = opts || {};
    this.notes = opts.notes || {};
    this.grants = opts.grants === undefined ? null : opts.grants;
    this.grantsLine = opts.grantsLine || null;
    this.sections = {};
    this.excerpts = {}; this.excerptOrder = [];
    this.callTools = {}; this.callOrder = [];
    this.contents = {};  /* line -> a message's content, on this page (an elision's original) */
    this.ops = {}; this.opOrder = [];  /* op id -> its dispatch's line, on this page */
  }
  AT.Renderer = Renderer;
  Renderer.prototype.remember = function (id, line, role, content) {
    var ex = (contentText(content) || "").trim().replace(/\n/g, " ").slice(0, EXCERPT_CHARS);
    this.excerpts[id] = [line, role, ex]; this.excerptOrder.push(id);
    if (this.excerptOrder.length > WINDOW) delete this.excerpts[this.excerptOrder.shift()];
  };
  Renderer.prototype.byLine = function () {
    var out = {}, self = this;
    this.excerptOrder.forEach(function (id) { var v = self.excerpts[id]; if (v) out[v[0]] = v; });
    return out;
  };
  /* One line of the file (its text) as a card; line is its number (0: not known yet). */
  Renderer.prototype.render = function (raw, line) {
    var env;
    try { env = JSON.parse(raw); } catch (e) { env = undefined; }
    return this.card(env, raw, line);
  };
  Renderer.prototype.card = function (env, raw, line) {
    var note = (line && this.notes[line]) || {};
    if (!env || typeof env !== "object" || Array.isArray(env) || typeof env.id !== "string" || typeof env.type !== "string") {
      return this.damaged(env, raw, line);
    }
    var p = env.payload && typeof env.payload === "object" && !Array.isArray(env.payload) ? env.payload : {};
    var art;
    try {
      var fn = KINDS[env.type];
      art = fn ? fn.call(this, env, p, note, line) : this.unknown(env, env.payload, note, line);
    } catch (e) {
      art = this.unknown(env, env.payload, note, line);
    }
    if (note.refusal) { var b = art.querySelector(".body"); b.insertBefore(el("p", "refusal", "load refuses this line: " + note.refusal), b.firstChild); }
    art.appendChild(this.raw(raw, line, note));
    return art;
  };
  Renderer.prototype.article = function (env, classes, data, kind, chips, note, line) {
    var a = el("article", "rec " + classes);
    a.id = anchor(env.id, note);
    if (line) a.setAttribute("data-line", String(line));
    a.setAttribute("data-type", visible(env.type));
    Object.keys(data).forEach(function (k) { a.setAttribute("data-" + k, visible(data[k])); });
    a.tabIndex = -1;
    var h = el("header"), ln = el("a", "ln", line ? String(line) : "\u2026");
    if (line) { ln.id = "L" + line; ln.title = "permalink to line " + line; }
    ln.setAttribute("href", "#" + a.id);
    var t = timeEl(env.ts);
    add(h, ln, el("span", "kind", kind), t);
    chips.forEach(function (c) { if (c) h.appendChild(c); });
    a.appendChild(h);
    a.appendChild(el("div", "body"));
    return a;
  };
  Renderer.prototype.raw = function (raw, line, note) {
    var d = el("details", "raw"), more = "";
    if (note.cut) more += "\n\u2026 the line is " + sizeText(note.cut) + "; long strings are shortened here (line " + line + " of the file)";
    if (raw.length > MAX_RAW) { more += "\n\u2026 " + num(raw.length - MAX_RAW) + " more characters (line " + line + " of the file)"; raw = raw.slice(0, MAX_RAW); }
    add(d, el("summary", null, "raw JSON"), el("pre", null, raw + more));
    return d;
  };
  function body(a) { return a.querySelector(".body"); }

  Renderer.prototype.damaged = function (env, raw, line) {
    var a = el("article", "rec k-unknown");
    if (line) { a.setAttribute("data-line", String(line)); a.id = "d-" + line; }
    a.setAttribute("data-type", "damaged"); a.tabIndex = -1;
    var h = el("header"), ln = el("a", "ln", line ? String(line) : "\u2026");
    if (line) ln.id = "L" + line;
    add(h, ln, el("span", "kind", "not an envelope"));
    var b = el("div", "body");
    add(b, el("p", "refusal", "line " + (line || "?") + " is not a whole envelope"), block(typeof env === "string" ? env : raw));
    add(a, h, b);
    return a;
  };

  Renderer.prototype.unknown = function (env, p, note, line) {
    var a = this.article(env, "k-unknown", {}, String(env.type), [], note, line);
    add(body(a), el("p", "none", "a type this version does not know; kept as it is"), block(compact(p, true)));
    return a;
  };

  var KINDS = {};
  KINDS["session-meta"] = function (env, p, note, line) {
    var a = this.article(env, "k-meta", {}, "session-meta", [], note, line), t = el("table", "kv");
    Object.keys(p).forEach(function (k) { var tr = el("tr"); add(tr, el("th", null, k), el("td", null, textOf(p[k]))); t.appendChild(tr); });
    body(a).appendChild(t);
    return a;
  };

  KINDS.message = function (env, p, note, line) {
    var role = String(p.role === undefined ? "?" : str(p.role)), chips = [], data = { role: role };
    ["sysprompt", "sticky"].forEach(function (f) { if (p[f]) chips.push(chip(f, "flag")); });
    if (p.depth !== undefined && p.depth !== null) chips.push(chip("depth " + textOf(p.depth), "flag"));
    if (p.name) chips.push(chip("name " + textOf(p.name), "flag"));
    if (note.tokens) {
      var tk = note.tokens, cached = tk[2] + tk[3], tc = chip(num(tk[0]) + " in · " + num(tk[1]) + " out" + (cached ? " · " + num(cached) + " cached" : ""), "tokens");
      tc.title = "tokens: input " + num(tk[0]) + ", output " + num(tk[1]) + ", cache read " + num(tk[2]) + ", cache write " + num(tk[3]);
      chips.push(tc);
    }
    var folded = [];
    Object.keys(p).forEach(function (k) {
      if (MESSAGE_KEYS[k]) return;
      var v = p[k], shown = textOf(v);
      if (shown.length <= 60 && shown.indexOf("\n") < 0 && chips.length < 12 && !isCut(v)) chips.push(chip(k + "=" + shown, "extra"));
      else {
        var d = el("details", "fold extra");
        add(d, el("summary", null, k + ", " + sizeText(isCut(v) ? v.bytes : utf8len(shown))),
            el("pre", "txt", (typeof v === "string" || isCut(v) ? shown : compact(v, true)).slice(0, MAX_BLOCK)));
        folded.push(d);
      }
    });
    var classes = "k-message r-" + (role.toLowerCase().replace(/[^a-z0-9-]/g, "").slice(0, 20) || "x");
    if (note.elided) chips.push(goneChip(note.elided, "elided at line " + note.elided + ": the model sees the stub"));
    if (note.compacted) { chips.push(goneChip(note.compacted, "compacted away at line " + note.compacted)); classes += " replaced"; }
    if (note.rewound) { chips.push(goneChip(note.rewound, "dropped by the rewind at line " + note.rewound + ": no longer sent")); classes += " rewound"; }
    if (note.unanswered) {
      chips.push(chip("unanswered: " + note.unanswered.join(", "), "pending bad", "no tool message answers this call: a chat API refuses the conversation until answer_unanswered_tool_calls() answers it"));
      classes += " pending";
    }
    if (note.orphan) chips.push(chip("answers no call", "bad", "no live call before it has this id: chat_messages() leaves it out"));
    var parts = [], callId = p.tool_call_id, self = this;
    if (callId !== undefined && callId !== null) {
      var cid = String(str(callId)), tool = this.callTools[cid];
      data.call = cid;
      if (tool) data.tool = tool;
      var pa = el("p", "answers"), ref = el("a", "callref");
      ref.setAttribute("data-call", visible(cid));
      add(ref, tool || "?", " ", el("code", null, cid));
      add(pa, "result of ", ref);
      parts.push(pa);
    }
    var t = contentText(p.content);
    if (t === null) { if (!p.tool_calls) parts.push(el("p", "none", "(no content)")); }
    else {
      var o = { md: (role === "user" || role === "assistant" || role === "system") && (typeof p.content === "string" || isCut(p.content) || Array.isArray(p.content)), line: line };
      if (isCut(p.content)) o.size = p.content.bytes;
      parts.push(block(t, o));
    }
    parts = parts.concat(folded);
    var calls = p.tool_calls;
    if (Array.isArray(calls) && calls.length) {
      var ul = el("ul", "calls"), tools = [];
      calls.forEach(function (call) {
        var c = callParts(call);
        self.callTools[c[0]] = c[1]; self.callOrder.push(c[0]);
        if (self.callOrder.length > WINDOW) delete self.callTools[self.callOrder.shift()];
        tools.push(c[1]);
        var li = el("li", "call");
        li.setAttribute("data-call", visible(c[0]));
        add(li, el("span", "tool", c[1]), " ", el("code", "cid", c[0]), el("span", "state"), block(c[2], { cls: "args" }));
        ul.appendChild(li);
      });
      data.tool = tools.join(" ");
      parts.push(ul);
    }
    this.remember(env.id, line, role, p.content);
    if (line) this.contents[line] = contentText(p.content) || "";
    var a = this.article(env, classes, data, role, chips, note, line), b = body(a);
    parts.forEach(function (x) { b.appendChild(x); });
    return a;
  };

  KINDS.grants = function (env, p, note, line) {
    var chips = [];
    if (note.last) chips.push(chip("in force at the end (the last snapshot)", "ok"));
    var prev = this.grantsLine;
    this.grants = p.grants; this.grantsLine = line;
    var a = this.article(env, "k-grants", {}, "grants", chips, note, line), b = body(a);
    if (prev) add(b, add(el("p"), "replaces the snapshot of ", lineLink(prev)));
    b.appendChild(block(compact(p.grants === undefined ? null : p.grants, true)));
    return a;
  };

  function excerptList(rows, total) {
    var ol = el("ol", "replaced-list");
    rows.forEach(function (r) { add(ol, add(el("li"), lineLink(r[0]), " ", el("span", "role", r[1] || ""), " ", r[2] || "")); });
    if (total > rows.length) ol.appendChild(el("li", null, "\u2026 and " + num(total - rows.length) + " more"));
    return ol;
  }

  KINDS.compaction = function (env, p, note, line) {
    var before = p["tokens-before"], after = p["tokens-after"], chips = [];
    if (typeof before === "number" && typeof after === "number" && Math.floor(before) === before && Math.floor(after) === after) {
      var pct = before > 0 && after <= before ? " (\u2212" + (100 - Math.floor(100 * after / before)) + "%)" : "";
      chips.push(chip("tokens " + num(before) + " \u2192 " + num(after) + pct, "tokens"));
    }
    if (p.fallback) chips.push(chip("fallback: hard-trimmed, no summary model", "bad"));
    var hasRep = Array.isArray(p.replacement);
    if (hasRep) chips.push(chip("with replacement", "flag"));
    var through = p["replaces-through-id"], throughLine = note.through || (typeof through === "string" && this.excerpts[through] ? this.excerpts[through][0] : null);
    var replaced = el("div", "cut-replaced");
    if (note.replaced) {
      var n = note.replaced_n, span = note.span;
      var spanText = !n ? "nothing" : (span[0] !== span[1] ? "lines " + span[0] + "\u2013" + span[1] : "line " + span[0]);
      var byLine = this.byLine();
      var rows = note.replaced.map(function (r) { var got = byLine[r[0]]; return [r[0], r[1] || (got ? got[1] : ""), r[2] || (got ? got[2] : "")]; });
      add(replaced, el("h4", null, "replaced: " + num(n) + " message" + (n !== 1 ? "s" : "") + " (" + spanText + ")"), excerptList(rows, n));
      if (note.kept && note.kept.length) {
        var kp = el("p", "kept", "kept (sticky): ");
        note.kept.forEach(function (k, i) { if (i) kp.appendChild(doc.createTextNode(", ")); kp.appendChild(lineLink(k)); });
        replaced.appendChild(kp);
      }
    } else {
      add(replaced, add(el("h4", null, "replaced: everything live through "), lineLink(throughLine) || String(through)));
    }
    var sent = el("div", "cut-sent");
    sent.appendChild(el("h4", null, "what the model is sent after the cut"));
    if (hasRep) {
      sent.appendChild(el("p", null, "the replacement messages, in place of the summary (which is recorded but not sent):"));
      var parts = note.parts || [];
      p.replacement.forEach(function (m, k) {
        m = m && typeof m === "object" && !Array.isArray(m) ? m : {};
        var role = String(m.role === undefined ? "?" : str(m.role)), rid = env.id + ":" + k, d = el("div", "repl r-" + role);
        d.id = PLAIN_ID.test(rid) ? "e-" + rid : (note.pa && note.pa[k]) || "e-x" + rid.length;
        add(d, el("span", "role", role), " ", el("code", null, rid));
        var lt = parts[k] || [];
        [["elided", lt[0]], ["compacted away", lt[1]], ["dropped by the rewind", lt[2]]].forEach(function (w) {
          if (w[1]) { d.appendChild(doc.createTextNode(" ")); d.appendChild(goneChip(w[1], w[0] + " at line " + w[1])); }
        });
        d.appendChild(block(contentText(m.content) || "(no content)"));
        sent.appendChild(d);
      });
      var f = el("details", "fold");
      add(f, el("summary", null, "the recorded summary"), block(textOf(p.summary === undefined ? "" : p.summary), { md: true }));
      sent.appendChild(f);
    } else {
      sent.appendChild(el("p", null, "the sticky messages kept, then this summary as a user message, then what follows:"));
      sent.appendChild(block(textOf(p.summary === undefined ? "" : p.summary), { md: true, cls: "summary" }));
    }
    var a = this.article(env, "k-compaction cut", {}, "compaction \u2014 the cut", chips, note, line), grid = el("div", "cut-grid");
    add(grid, sent, replaced);
    body(a).appendChild(grid);
    return a;
  };

  KINDS.elision = function (env, p, note, line) {
    var items = Array.isArray(p.items) ? p.items : [], ul = el("ul", "elided"), self = this;
    if (note.items) {
      note.items.forEach(function (it, k) {
        var item = items[k], stub = item && typeof item === "object" ? item.stub : undefined, li = el("li");
        var st = el("div", "stub", "stub the model sees: ");
        st.appendChild(block(typeof stub === "string" ? stub : compact(stub === undefined ? null : stub)));
        var orig = el("details", "original");
        var orig, text = it[2] ? self.contents[it[0]] : undefined;
        if (text !== undefined) {
          orig = el("details", "original");
          add(orig, el("summary", null, "the original, " + sizeText(it[3] || utf8len(text))), block(text, { line: it[0] }));
        } else if (it[0]) {
          orig = add(el("p", "original"), "the original" + (it[3] ? ", " + sizeText(it[3]) : "") + ": ", lineLink(it[0]));
        }
        add(li, lineLink(it[0]), " ", el("span", "role", it[1] || ""), " ", st, orig);
        ul.appendChild(li);
      });
    } else {
      items.forEach(function (item) {
        if (!item || typeof item !== "object") return;
        var got = typeof item.id === "string" ? self.excerpts[item.id] : null, li = el("li");
        add(li, got ? lineLink(got[0]) : String(item.id), " stub: ", block(typeof item.stub === "string" ? item.stub : compact(item.stub === undefined ? null : item.stub)));
        ul.appendChild(li);
      });
    }
    var a = this.article(env, "k-elision", {}, "elision", [chip(items.length + " item" + (items.length !== 1 ? "s" : ""), "flag")], note, line);
    body(a).appendChild(ul);
    return a;
  };

  KINDS.rewind = function (env, p, note, line) {
    var through = p["through-id"], b = [], throughLine;
    if (through === null || through === undefined) {
      b.push(el("p", null, "empties the live list: every earlier message is dropped from what the model is sent"));
      throughLine = 0;
    } else {
      throughLine = note.through || (typeof through === "string" && this.excerpts[through] ? this.excerpts[through][0] : null);
      b.push(add(el("p"), "keeps the live messages through ", lineLink(throughLine) || String(through), " and drops every live message after it"));
    }
    if (note.dropped) {
      var n = note.dropped_n, byLine = this.byLine();
      var rows = note.dropped.map(function (r) { var got = byLine[r[0]]; return [r[0], r[1] || (got ? got[1] : ""), r[2] || (got ? got[2] : "")]; });
      b.push(el("h4", null, "dropped: " + num(n) + " message" + (n !== 1 ? "s" : "")), excerptList(rows, n));
    } else if (throughLine !== null) {
      var self = this, later = this.excerptOrder.map(function (id) { return self.excerpts[id]; }).filter(function (v) { return v && v[0] > throughLine; });
      if (later.length) b.push(el("h4", null, "messages written after it (the ones still live are dropped)"), excerptList(later.slice(0, CUT_LIST), later.length));
    }
    var a = this.article(env, "k-rewind", {}, "rewind", [], note, line), bd = body(a);
    b.forEach(function (x) { bd.appendChild(x); });
    return a;
  };

  KINDS["tool-dispatched"] = function (env, p, note, line) {
    var tool = String(str(p.tool)), callId = String(str(p["call-id"])), chips = [], classes = "k-dispatch", state = "";
    if (note.settled) { var s = el("a", "chip ok", "settled at line " + note.settled); s.setAttribute("href", "#L" + note.settled); chips.push(s); }
    else if (note.pending) {
      state = note.pending;
      chips.push(chip(state + ": never settled", "pending bad", "result-persisted: its result is in the file; dispatched: it may or may not have run"));
      classes += " pending";
    } else chips.push(chip("dispatched", "state"));
    ["round", "idempotency"].forEach(function (k) { if (p[k] !== undefined && p[k] !== null) chips.push(chip(k + " " + textOf(p[k]), "flag")); });
    var g;
    if (this.grantsLine) {
      var granted = this.grants && typeof this.grants === "object" && !Array.isArray(this.grants) ? this.grants[tool] : undefined;
      g = add(el("p", "grants-in-force"), "grants in force: ", lineLink(this.grantsLine, "snapshot of line " + this.grantsLine),
              granted !== undefined ? " (" + tool + ": " + textOf(granted) + ")" : " (" + tool + " not in it)");
    } else g = el("p", "grants-in-force", "grants in force: none recorded yet");
    var data = { call: callId, tool: tool, op: env.id };
    if (state) data.state = state;
    if (note.settled) data.settled = String(note.settled);
    if (line) { this.ops[env.id] = line; this.opOrder.push(env.id); if (this.opOrder.length > WINDOW) delete this.ops[this.opOrder.shift()]; }
    var a = this.article(env, classes, data, "tool dispatched", chips, note, line), b = body(a);
    add(b, add(el("p"), el("span", "tool", tool), " ", el("code", "cid", callId), " op ", el("code", null, env.id), p["run-id"] ? " run " + textOf(p["run-id"]) : ""),
        blockOf(p.arguments === undefined ? null : p.arguments, { cls: "args" }), g);
    return a;
  };

  KINDS["tool-settled"] = function (env, p, note, line) {
    var outcome = String(str(p.outcome)), cls = { completed: "ok", failed: "bad", "outcome-unknown": "warn" }[outcome] || "bad";
    var chips = [chip(outcome, "state " + cls)], data = { op: String(str(p["op-id"])), state: outcome }, d = p.duration;
    if (typeof d === "number") { chips.push(chip(seconds(d), "dur")); data.duration = seconds(d); }
    if (outcome !== "completed") data.error = "1";
    var a = this.article(env, "k-settle" + (outcome !== "completed" ? " error" : ""), data, "tool settled", chips, note, line), b = body(a);
    var opLine = note.op || this.ops[String(str(p["op-id"]))];
    add(b, add(el("p"), "settles op ", el("code", null, String(str(p["op-id"]))), opLine ? " dispatched at " : "", opLine ? lineLink(opLine) : null));
    ["reason", "error"].forEach(function (k) { if (p[k] !== undefined && p[k] !== null) add(b, add(el("p", k), el("b", null, k), " " + textOf(p[k]))); });
    if (p["result-digest"]) b.appendChild(el("p", "digest", "result " + textOf(p["result-digest"])));
    if (p.artifact && typeof p.artifact === "object" && !Array.isArray(p.artifact)) b.appendChild(artifact(p.artifact, note.artifact || { status: "missing" }));
    return a;
  };
  function artifact(art, found) {
    var name = textOf(art.file === undefined ? null : art.file);
    var chips = { ok: chip("digest matches", "ok"), missing: chip("missing", "bad"), mismatch: chip("digest does not match", "bad", "found " + found.actual), invalid: chip("not a plain file name", "bad") };
    var box = el("div", "artifact-box " + found.status), lk;
    if (found.href) { lk = el("a", "artifact", name); lk.setAttribute("href", found.href); }
    else lk = el("code", null, name);
    var bits = [];
    if (typeof art.bytes === "number") bits.push(sizeText(art.bytes));
    if (typeof art["elided-chars"] === "number") bits.push(num(art["elided-chars"]) + " chars kept out of the conversation");
    add(box, "artifact ", lk, " ", chips[found.status] || chips.missing, " " + bits.join(", "), el("div", "digest", textOf(art.digest === undefined ? "" : art.digest)));
    return box;
  }

  KINDS["run-context"] = function (env, p, note, line) {
    var a = this.article(env, "k-context", {}, "run-context", [], note, line), b = body(a), self = this;
    var facts = Array.isArray(p.facts) ? p.facts : [];
    if (facts.length) {
      var t = el("table", "kv");
      facts.forEach(function (f) {
        var tr = el("tr");
        if (Array.isArray(f) && f.length === 2) add(tr, el("th", null, textOf(f[0])), el("td", null, textOf(f[1])));
        else { var td = el("td", null, compact(f)); td.colSpan = 2; tr.appendChild(td); }
        t.appendChild(tr);
      });
      b.appendChild(t);
    }
    var given = note.sections || [];
    (Array.isArray(p.sections) ? p.sections : []).forEach(function (sec, k) {
      if (!sec || typeof sec !== "object" || Array.isArray(sec)) return;
      var name = textOf(sec.name === undefined ? null : sec.name), dg = textOf(sec.digest === undefined ? null : sec.digest), prev = self.sections[name], n = given[k] || [];
      if (sec.text !== undefined) {
        var status = n[0] || (!prev ? "new" : (prev[0] === dg ? "unchanged" : "changed")), since = n[0] ? n[1] : (prev ? prev[1] : null);
        self.sections[name] = [dg, line];
        var d = el("div", "section " + status);
        add(d, el("b", null, name), " ", chip(status, "flag"), since ? " since " : "", since ? lineLink(since) : null, " ", el("span", "digest", dg), blockOf(sec.text, { md: true }));
        b.appendChild(d);
      } else {
        var at = n[2] || (prev ? prev[1] : null), u = el("div", "section unchanged");
        add(u, el("b", null, name), " ", chip("unchanged", "flag"), " text at ", lineLink(at) || textOf(sec["rendered-in"] === undefined ? null : sec["rendered-in"]));
        b.appendChild(u);
        if (!self.sections[name]) self.sections[name] = [dg, at || line];
      }
    });
    return a;
  };

  /* An importer's copy of one line of its source: folded, the text on demand. */
  KINDS["source-line"] = function (env, p, note, line) {
    var status = textOf(p.status === undefined ? "?" : p.status), at = p.line;
    var a = this.article(env, "k-source", { status: status }, "source line", [chip("line " + textOf(at === undefined ? "?" : at) + " of the source", "flag"), chip(status, status === "damaged" ? "bad" : (status === "used" ? "ok" : "flag"))], note, line);
    var d = el("details", "fold source"), what, shown;
    if (p.text !== undefined) { shown = textOf(p.text); what = sizeText(isCut(p.text) ? p.text.bytes : utf8len(shown)); }
    else if (p.base64 !== undefined) { shown = textOf(p.base64); what = "not UTF-8, as base64"; }
    else { shown = compact(p, true); what = "its fields"; }
    add(d, el("summary", null, "the source's line, " + what), blockOf(p.text !== undefined ? p.text : shown));
    if (p.damage !== undefined) body(a).appendChild(el("p", "warning", "damage: " + textOf(p.damage)));
    body(a).appendChild(d);
    return a;
  };

  /* -- page data: the records a page carries, as lines of JSON */
  AT.island = function (id) {
    var s = doc.getElementById(id);
    return s ? s.textContent : null;
  };
  AT.visible = visible;
  AT.sizeText = sizeText;
  AT.humanTime = humanTime;
})();
