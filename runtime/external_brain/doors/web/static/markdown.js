/* Markdown to DOM for card bodies, which are untrusted: every piece of text becomes a text node
 * (document.createTextNode / textContent), never HTML, so `<script>` or `<img onerror>` in a card
 * shows as the characters it is. Links go only to http(s), mailto, or a card of this vault
 * (`[[wikilinks]]`); images are shown as links, never loaded (nothing is fetched from elsewhere).
 * Supported: ATX headings, paragraphs, fenced and indented code, block quotes, bullet, numbered
 * and task lists (nested by indentation), tables, rules; inline code, bold, italic,
 * strikethrough, links, autolinks, wikilinks. Anything else is shown as written. */
(function () {
  "use strict";

  const SAFE_URL = /^(https?:\/\/|mailto:)/i;

  function el(tag, cls) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    return node;
  }

  function cardHref(name) {
    return "#/card/" + encodeURIComponent(name.trim());
  }

  // ------------------------------------------------------------------ inline

  // Time linear in the text, whatever the text. Why: each `[`, `**` or `~~` that never closed
  // made its regex scan to the end of the line, at every such character, so a long line of them
  // took time quadratic in its length (an 80,000-character line of `[`: 20 s of a frozen tab; a
  // card may hold 500,000). So each construct that waits for a closing mark looks at most so far
  // ahead (a link's text 500 characters, its URL 2,000, bold 1,000, a wikilink's parts 300), and
  // is tried only when `Finder` (each mark's next place, found once per text) says its regex
  // will match: the regexes say what is matched, only ever run to match, and what a match takes
  // is not looked at again. (Code, emphasis and autolinks stop at their first closing character
  // anyway, and are tried as they are.)
  const URL_END = /[)\s]/g;
  const TITLE = /\s+"[^"\n]{0,300}"\)/y;

  /** Where things are in one text: the next place at or after `from` of each kind, remembered,
   * so that asked with growing positions (as `appendInline` goes) each kind costs one pass. */
  class Finder {
    constructor(text) { this.text = text; this.kept = new Map(); this.titles = new Map(); }

    next(kind, from, find) {
      const known = this.kept.get(kind);
      if (known !== undefined && known.from <= from && (known.at === -1 || known.at >= from)) return known.at;
      const at = find(from);
      this.kept.set(kind, { from, at });
      return at;
    }

    mark(kind, mark, from) { return this.next(kind, from, (f) => this.text.indexOf(mark, f)); }

    /** The next `mark` whose character before is not white space (a closing `**`, `~~`). */
    closing(mark, from) {
      return this.next("closing " + mark, from, (f) => {
        let k = this.text.indexOf(mark, f);
        while (k !== -1 && /\s/.test(this.text[k - 1])) k = this.text.indexOf(mark, k + 1);
        return k;
      });
    }

    /** Whether a link's `(URL)` (or `(URL "title")`) starts at `open`, the character after `](`. */
    destination(open) {
      const end = this.next("url end", open, (f) => { URL_END.lastIndex = f; const m = URL_END.exec(this.text); return m ? m.index : -1; });
      if (end === -1 || end === open || end - open > 2000) return false;
      if (this.text[end] === ")") return true;
      if (!this.titles.has(end)) { TITLE.lastIndex = end; this.titles.set(end, TITLE.test(this.text)); }
      return this.titles.get(end);
    }
  }

  function linkAt(text, i, find, labelStart, minLabel) {
    const close = find.mark("] of " + labelStart, "]", i + labelStart);
    const label = close - (i + labelStart);
    return close !== -1 && label >= minLabel && label <= 500 && text[close + 1] === "(" && find.destination(close + 2);
  }

  function wikilinkAt(text, i, find) {
    const s = text[i] === "!" ? i + 1 : i;
    if (text[s] !== "[" || text[s + 1] !== "[") return false;
    const start = s + 2;
    const end = find.mark("] of [[", "]", start);
    if (end === -1 || text[end + 1] !== "]") return false;
    const within = (at) => (at !== -1 && at < end ? at : end);
    const bar = within(find.mark("| of [[", "|", start));
    const hash = within(find.mark("# of [[", "#", start));
    const nameEnd = Math.min(bar, hash);
    if (nameEnd - start < 1 || nameEnd - start > 300) return false;
    let at = nameEnd;
    if (at === hash && hash < end) {   // #heading, up to the alias's `|`
      at = bar > hash ? bar : end;
      if (at - hash - 1 > 300) return false;
    }
    if (at === end) return true;
    return end - at - 1 >= 1 && end - at - 1 <= 300;   // |alias
  }

  function pairAt(text, i, find) {   // **bold**, __bold__, ~~strike~~
    const mark = text[i] + text[i];
    if (text[i + 1] !== text[i] || i + 2 >= text.length || /\s/.test(text[i + 2])) return false;
    const close = find.closing(mark, i + 3);
    return close !== -1 && close - (i + 2) <= 1001;
  }

  const INLINE = [
    // [name, regex (sticky), whether it can match at i (null: try it), builder(match) -> Node]
    ["code", /`([^`\n]+)`/y, null, (m) => { const c = el("code"); c.textContent = m[1]; return c; }],
    ["wikilink", /!?\[\[([^\]|#\n]{1,300})(#[^\]|\n]{0,300})?(?:\|([^\]\n]{1,300}))?\]\]/y, wikilinkAt, (m) => {
      const a = el("a", "wikilink");
      a.href = cardHref(m[1]);
      a.textContent = (m[3] || (m[1] + (m[2] || ""))).trim();
      return a;
    }],
    ["image", /!\[([^\]\n]{0,500})\]\(([^)\s]{1,2000})(?:\s+"[^"\n]{0,300}")?\)/y,
      (text, i, find) => text[i] === "!" && text[i + 1] === "[" && linkAt(text, i, find, 2, 0), (m) => {
      const label = "image: " + (m[1] || m[2]);
      if (SAFE_URL.test(m[2])) {
        const a = el("a", "image-link");
        a.href = m[2]; a.rel = "noopener noreferrer"; a.target = "_blank";
        a.textContent = label;
        return a;
      }
      return document.createTextNode("[" + label + "]");
    }],
    ["link", /\[([^\]\n]{1,500})\]\(([^)\s]{1,2000})(?:\s+"[^"\n]{0,300}")?\)/y,
      (text, i, find) => text[i] === "[" && linkAt(text, i, find, 1, 1), (m) => {
      if (!SAFE_URL.test(m[2])) return document.createTextNode(m[0]);
      const a = el("a");
      a.href = m[2]; a.rel = "noopener noreferrer"; a.target = "_blank";
      appendInline(a, m[1]);
      return a;
    }],
    ["autolink", /https?:\/\/[^\s<>()\]]+[^\s<>()\].,;:!?'"]/y, null, (m) => {
      const a = el("a");
      a.href = m[0]; a.rel = "noopener noreferrer"; a.target = "_blank";
      a.textContent = m[0];
      return a;
    }],
    ["strong", /\*\*(?=\S)([^\n]{0,1000}?\S)\*\*|__(?=\S)([^\n]{0,1000}?\S)__/y,
      (text, i, find) => (text[i] === "*" || text[i] === "_") && pairAt(text, i, find), (m) => {
      const s = el("strong"); appendInline(s, m[1] || m[2]); return s;
    }],
    ["strike", /~~(?=\S)([^\n]{0,1000}?\S)~~/y, (text, i, find) => text[i] === "~" && pairAt(text, i, find), (m) => { const s = el("del"); appendInline(s, m[1]); return s; }],
    ["em", /\*(?=[^\s*])([^*\n]*?[^\s*])\*|(?<![\w])_(?=[^\s_])([^_\n]*?[^\s_])_(?![\w])/y, null, (m) => {
      const s = el("em"); appendInline(s, m[1] || m[2]); return s;
    }],
  ];
  const STARTERS = /[`!\[*_~h]/;

  function appendInline(parent, text) {
    let plain = "";
    let i = 0;
    const find = new Finder(text);
    const flush = () => { if (plain) { parent.appendChild(document.createTextNode(plain)); plain = ""; } };
    while (i < text.length) {
      const ch = text[i];
      let matched = false;
      if (STARTERS.test(ch)) {
        for (const [, re, possible, build] of INLINE) {
          if (possible && !possible(text, i, find)) continue;
          re.lastIndex = i;
          const m = re.exec(text);
          if (m && m.index === i && m[0].length) {
            flush();
            parent.appendChild(build(m));
            i += m[0].length;
            matched = true;
            break;
          }
        }
      }
      if (!matched) {
        if (ch === "\\" && i + 1 < text.length && /[\\`*_{}\[\]()#+\-.!~|<>]/.test(text[i + 1])) {
          plain += text[i + 1];
          i += 2;
        } else {
          plain += ch;
          i += 1;
        }
      }
    }
    flush();
  }

  // ------------------------------------------------------------------ blocks

  const FENCE = /^\s{0,3}(```+|~~~+)\s*([^`\s]*)/;
  const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
  const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
  const QUOTE = /^\s{0,3}>\s?(.*)$/;
  const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
  const TABLE_SEP = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/;

  function splitRow(line) {
    let row = line.trim();
    if (row.startsWith("|")) row = row.slice(1);
    if (row.endsWith("|") && !row.endsWith("\\|")) row = row.slice(0, -1);
    return row.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
  }

  function renderBlocks(parent, lines, depth) {
    let i = 0;
    let para = [];
    const flushPara = () => {
      if (!para.length) return;
      const p = el("p");
      para.forEach((line, n) => {
        if (n) p.appendChild(el("br"));
        appendInline(p, line.trim());
      });
      parent.appendChild(p);
      para = [];
    };
    while (i < lines.length) {
      const line = lines[i];
      let m;
      if (!line.trim()) { flushPara(); i++; continue; }
      if ((m = FENCE.exec(line))) {
        flushPara();
        const fence = m[1];
        const body = [];
        i++;
        while (i < lines.length && !lines[i].trim().startsWith(fence)) body.push(lines[i++]);
        i++;
        const pre = el("pre");
        const code = el("code");
        if (m[2]) code.dataset.lang = m[2];
        code.textContent = body.join("\n");
        pre.appendChild(code);
        parent.appendChild(pre);
        continue;
      }
      if ((m = HEADING.exec(line))) {
        flushPara();
        const level = Math.min(6, m[1].length + 1);   // the card's own title is the page's h1
        const h = el("h" + level);
        appendInline(h, m[2]);
        parent.appendChild(h);
        i++;
        continue;
      }
      if (RULE.test(line) && !para.length) {
        parent.appendChild(el("hr"));
        i++;
        continue;
      }
      if (QUOTE.test(line)) {
        flushPara();
        const inner = [];
        while (i < lines.length && (m = QUOTE.exec(lines[i]))) { inner.push(m[1]); i++; }
        const q = el("blockquote");
        if (depth < 8) renderBlocks(q, inner, depth + 1); else q.textContent = inner.join("\n");
        parent.appendChild(q);
        continue;
      }
      if (ITEM.test(line)) {
        flushPara();
        i = renderList(parent, lines, i, depth);
        continue;
      }
      if (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes("-")) {
        flushPara();
        const wrap = el("div", "table-wrap");
        const table = el("table");
        const head = el("thead");
        const tr = el("tr");
        splitRow(line).forEach((cell) => { const th = el("th"); appendInline(th, cell); tr.appendChild(th); });
        head.appendChild(tr);
        table.appendChild(head);
        const tbody = el("tbody");
        i += 2;
        while (i < lines.length && lines[i].includes("|") && lines[i].trim()) {
          const row = el("tr");
          splitRow(lines[i]).forEach((cell) => { const td = el("td"); appendInline(td, cell); row.appendChild(td); });
          tbody.appendChild(row);
          i++;
        }
        table.appendChild(tbody);
        wrap.appendChild(table);
        parent.appendChild(wrap);
        continue;
      }
      if (/^( {4}|\t)/.test(line) && !para.length) {
        const body = [];
        while (i < lines.length && (/^( {4}|\t)/.test(lines[i]) || !lines[i].trim())) {
          body.push(lines[i].replace(/^( {4}|\t)/, ""));
          i++;
        }
        while (body.length && !body[body.length - 1].trim()) body.pop();
        const pre = el("pre");
        const code = el("code");
        code.textContent = body.join("\n");
        pre.appendChild(code);
        parent.appendChild(pre);
        continue;
      }
      para.push(line);
      i++;
    }
    flushPara();
  }

  function renderList(parent, lines, start, depth) {
    const first = ITEM.exec(lines[start]);
    const indent = first[1].replace(/\t/g, "    ").length;
    const ordered = /\d/.test(first[2]);
    const list = el(ordered ? "ol" : "ul");
    if (ordered) {
      const n = parseInt(first[2], 10);
      if (n !== 1) list.start = n;
    }
    let i = start;
    while (i < lines.length) {
      const m = ITEM.exec(lines[i]);
      if (!m) break;
      const here = m[1].replace(/\t/g, "    ").length;
      if (here < indent) break;
      if (here > indent) {   // a nested list belongs to the last item
        const last = list.lastElementChild || list.appendChild(el("li"));
        i = depth < 8 ? renderList(last, lines, i, depth + 1) : i + 1;
        continue;
      }
      if (/\d/.test(m[2]) !== ordered) break;
      const li = el("li");
      let text = m[3];
      const task = /^\[([ xX])\]\s+(.*)$/.exec(text);
      if (task) {
        li.className = "task";
        const box = el("span", "box");
        box.textContent = task[1] === " " ? "☐ " : "☑ ";
        li.appendChild(box);
        text = task[2];
      }
      appendInline(li, text);
      i++;
      // continuation lines (indented, not a new item)
      while (i < lines.length && lines[i].trim() && !ITEM.test(lines[i]) && /^\s{2,}/.test(lines[i])) {
        li.appendChild(el("br"));
        appendInline(li, lines[i].trim());
        i++;
      }
      list.appendChild(li);
      if (i < lines.length && !lines[i].trim() && i + 1 < lines.length && ITEM.test(lines[i + 1])) i++;
    }
    parent.appendChild(list);
    return i;
  }

  /** Render `text` (Markdown) into a new <div class="md"> made only of elements and text nodes. */
  function render(text) {
    const root = el("div", "md");
    renderBlocks(root, String(text || "").replace(/\r\n?/g, "\n").split("\n"), 0);
    return root;
  }

  window.GardenMarkdown = { render, appendInline };
})();
