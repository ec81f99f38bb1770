/* The Memory Gardener's page: a small hash router and one function per page. Data comes from
 * the server's JSON routes under /web/api (the /v1 routes themselves at /web/api/v1/..., and the
 * page's few others); the session is an HttpOnly cookie, every request carries the CSRF token.
 * Card content is untrusted: it is only ever put on the page as text (`h` below sets
 * textContent; Markdown goes through GardenMarkdown, which builds text nodes). No innerHTML. */
(function () {
  "use strict";

  const API = "/web/api";
  const state = { session: null, vocabulary: null, graph: null, view: null, asked: null };
  const $ = (sel) => document.querySelector(sel);

  // ------------------------------------------------------------------ DOM helper

  // Every object the server sends is kept here (`call` passes each answer through `markData`).
  // Why: `h` takes an object in second place for attributes, so a card's field that is an object
  // where text was expected (an Inbox card's `source: {innerHTML: [...]}`, a log line's `event`)
  // set innerHTML. An object from the server is never attributes: it is shown as its JSON text.
  // (A walk after JSON.parse: a reviver cost ~3x as much, ~30 ms on a 1,000-card graph.)
  const FROM_SERVER = new WeakSet();

  function markData(value) {
    if (Array.isArray(value)) {
      for (const item of value) if (item !== null && typeof item === "object") markData(item);
    } else if (value !== null && typeof value === "object") {
      FROM_SERVER.add(value);
      for (const key in value) { const item = value[key]; if (item !== null && typeof item === "object") markData(item); }
    }
    return value;
  }

  /** h("div.cls#id", {attr: value, onclick: fn}, child...) — children are nodes or text; the
   * attributes are the page's own (an object from the server is a child, shown as text). */
  function h(spec, attrs, ...children) {
    const m = /^([a-z0-9]+)((?:[.#][\w-]+)*)$/i.exec(spec);
    const node = document.createElement(m ? m[1] : "div");
    if (m && m[2]) {
      for (const part of m[2].match(/[.#][\w-]+/g)) {
        if (part[0] === ".") node.classList.add(part.slice(1));
        else node.id = part.slice(1);
      }
    }
    if (attrs && (typeof attrs !== "object" || attrs instanceof Node || Array.isArray(attrs) || FROM_SERVER.has(attrs))) {
      children.unshift(attrs);
      attrs = null;
    }
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (k === "text") node.textContent = String(v);
      else if (k === "dataset") Object.assign(node.dataset, v);
      else if (k in node && typeof v !== "string") node[k] = v;
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    append(node, children);
    return node;
  }

  function append(node, children) {
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      node.appendChild(c instanceof Node ? c : document.createTextNode(typeof c === "object" ? JSON.stringify(c) : String(c)));
    }
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  function toast(text, kind) {
    const t = $("#toast");
    t.textContent = text;
    t.className = kind || "";
    t.hidden = false;
    toast.shown = performance.now();
    clearTimeout(toast.timer);
    toast.timer = setTimeout(() => { t.hidden = true; }, 5000);
  }

  // ------------------------------------------------------------------ the server

  class ApiError extends Error {
    constructor(status, body) {
      const e = (body && body.error) || {};
      super(e.message || `HTTP ${status}`);
      this.status = status;
      this.code = e.code || String(status);
      this.details = e.details || {};
    }
  }

  async function call(method, path, opts) {
    const o = opts || {};
    let url = API + path;
    if (o.query) {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(o.query)) {
        if (v === undefined || v === null || v === "" || v === false) continue;
        q.set(k, Array.isArray(v) ? v.join(",") : String(v));
      }
      const s = q.toString();
      if (s) url += "?" + s;
    }
    const headers = { Accept: "application/json" };
    // Every request of a session carries its token, GETs too (they can write: a search miss).
    if (state.session) headers["X-CSRF-Token"] = state.session.csrf;
    if (o.ifMatch) headers["If-Match"] = `"${o.ifMatch}"`;
    let body;
    if (o.body !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(o.body);
    }
    const res = await fetch(url, { method, headers, body, credentials: "same-origin", cache: "no-store" });
    let data = null;
    try { data = markData(await res.json()); } catch (_) { data = null; }
    if (!res.ok) {
      const err = new ApiError(res.status, data);
      if (res.status === 401 && path !== "/login") {
        state.session = null;
        showLogin("Your session ended; log in again.");
      }
      throw err;
    }
    return { data, headers: res.headers };
  }

  /** The agent a page acts for: an agent's session is always its own (the server binds it); the
   * owner may look through an agent's eyes with the "as agent" box. */
  function agentQuery() {
    if (!state.session || !state.session.owner) return {};
    const a = ($("#as-agent").value || "").trim();
    return a ? { agent_id: a } : {};
  }

  function errorBox(err) {
    const box = h("div.error", { role: "alert" },
      h("strong", err.code ? `${err.code}: ` : "Error: "), err.message || String(err));
    return box;
  }

  // ------------------------------------------------------------------ formatting

  function conf(c) { return typeof c === "number" ? c.toFixed(2) : "—"; }

  function actionOf(c) {
    if (typeof c !== "number") return { key: "reference", text: "reference only" };
    if (c >= 0.8) return { key: "apply", text: "apply" };
    if (c >= 0.5) return { key: "verify", text: "apply and verify" };
    return { key: "reference", text: "reference only" };
  }

  function confidenceBadge(c) {
    const a = actionOf(c);
    return h("span.conf.conf-" + a.key, { title: `confidence ${conf(c)}: ${a.text}` },
      h("span.meter", h("span.fill", { dataset: { pct: Math.round((c || 0) * 100) } })),
      ` ${conf(c)} · ${a.text}`);
  }

  function fillMeters(root) {
    for (const f of root.querySelectorAll(".meter .fill")) f.style.width = (f.dataset.pct || 0) + "%";
  }

  function cardLink(ref, title) {
    return h("a.card-link", { href: "#/card/" + encodeURIComponent(ref) }, title || ref);
  }

  function typeBadge(type) {
    const b = h("span.type", type || "untyped");
    b.style.borderColor = window.GardenGraph.colourOf(type);
    return b;
  }

  function when(ts) {
    if (!ts) return "";
    const d = new Date(ts);
    if (isNaN(d)) return String(ts);
    return d.toISOString().replace("T", " ").slice(0, 16) + " UTC";
  }

  // ------------------------------------------------------------------ router

  const PAGES = { search: pageSearch, card: pageCard, ingest: pageIngest, inbox: pageInbox, graph: pageGraph,
                  health: pageHealth };

  function parseHash() {
    const raw = location.hash.replace(/^#\/?/, "");
    const [path, query] = raw.split("?");
    const parts = path.split("/");
    return { page: parts[0] || "search", arg: parts.slice(1).join("/"), params: new URLSearchParams(query || "") };
  }

  async function route() {
    if (!state.session) return;
    const r = parseHash();
    const page = PAGES[r.page] ? r.page : "search";
    for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.page === page ||
      (page === "card" && a.dataset.page === "search"));
    if (state.view && state.view.leave) state.view.leave();
    if (!$("#toast").hidden && performance.now() - (toast.shown || 0) > 1500) $("#toast").hidden = true;
    state.view = null;
    const main = clear($("#main"));
    main.dataset.page = page;
    // Each visit renders into its own element: a page still loading when another is opened
    // goes on filling an element no longer shown, never the new page.
    const root = h("div.page");
    main.appendChild(root);
    try {
      await PAGES[page](root, decodeURIComponent(r.arg || ""), r.params);
    } catch (err) {
      if (err.status !== 401) root.appendChild(errorBox(err));
    }
    fillMeters(root);
  }

  async function vocabulary() {
    if (!state.vocabulary) state.vocabulary = (await call("GET", "/stats", { query: agentQuery() })).data;
    return state.vocabulary;
  }

  function select(name, values, current, blank) {
    const s = h("select", { name });
    if (blank !== undefined) s.appendChild(h("option", { value: "" }, blank));
    for (const v of values) s.appendChild(h("option", { value: v, selected: v === current }, v));
    return s;
  }

  function field(label, input, hint) {
    return h("label.field", h("span.label", label), input, hint ? h("span.hint", hint) : null);
  }

  // ------------------------------------------------------------------ login

  function showLogin(message) {
    $("#nav").hidden = true;
    $("#who").hidden = true;
    const main = clear($("#main"));
    main.dataset.page = "login";
    const key = h("input#key", { type: "password", name: "key", autocomplete: "current-password", required: true,
                                 placeholder: "the server's key, or an agent's key", spellcheck: "false" });
    const persona = h("input#persona", { type: "text", name: "persona", autocomplete: "off",
                                         placeholder: "(optional)", spellcheck: "false" });
    const out = h("div.out");
    const form = h("form#login.panel.narrow", { method: "post", action: API + "/login" },
      h("h1", "Log in"),
      h("p.muted", "Use the key `brain serve` was started with, or an agent's key from `brain keys add NAME` ",
        "(an agent's key sees only what that agent may). The key is sent once; the page then holds a session ",
        "cookie that scripts cannot read."),
      field("API key", key),
      field("Persona", persona, "a persona of [personas] in the vault's config, or none"),
      h("button.primary", { type: "submit" }, "Log in"),
      message ? h("p.notice", message) : null,
      out);
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      clear(out);
      try {
        const { data } = await call("POST", "/login", { body: { key: key.value, persona: persona.value || undefined } });
        key.value = "";
        startSession(data);
      } catch (err) {
        out.appendChild(errorBox(err));
      }
    });
    main.appendChild(form);
    key.focus();
  }

  function startSession(session) {
    state.session = session;
    state.vocabulary = null;
    $("#nav").hidden = false;
    $("#who").hidden = false;
    $("#identity").textContent = (session.owner ? "owner" : "agent " + session.agent) +
      (session.persona ? " · persona " + session.persona : "");
    $("#as-agent-box").hidden = !session.owner;
    if (!location.hash || location.hash === "#" || location.hash.startsWith("#/login")) location.hash = "#/search";
    else route();
  }

  async function logout() {
    try { await call("POST", "/logout"); } catch (_) { /* already gone */ }
    state.session = null;
    showLogin("Logged out.");
  }

  // ------------------------------------------------------------------ search

  async function pageSearch(main, _arg, params) {
    const vocab = await vocabulary();
    const q = h("input#q", { type: "search", name: "q", value: params.get("q") || "", autocomplete: "off",
                             placeholder: "What do you want to know? 例: ECS タイムアウト", spellcheck: "false" });
    const type = select("type", vocab.types, params.get("type") || "", "any type");
    const domain = select("domain", vocab.domains, params.get("domain") || "", "any domain");
    const tag = h("input", { type: "text", name: "tag", value: params.get("tag") || "", placeholder: "tag, tag" });
    const project = h("input", { type: "text", name: "project", value: params.get("project") || "",
                                 placeholder: "project" });
    const scope = select("scope", ["global", "agent"], params.get("scope") || "", "any scope");
    const explain = h("input", { type: "checkbox", name: "explain", checked: params.get("explain") !== "0" });
    const form = h("form#search.panel",
      h("div.searchbar", q, h("button.primary", { type: "submit" }, "Search")),
      h("div.filters", field("Type", type), field("Domain", domain), field("Tags", tag), field("Project", project),
        field("Scope", scope), h("label.check", explain, " explain")));
    const results = h("section#results");
    main.append(form, results);
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const p = new URLSearchParams();
      for (const [k, el] of [["q", q], ["type", type], ["domain", domain], ["tag", tag], ["project", project],
                             ["scope", scope]]) if (el.value.trim()) p.set(k, el.value.trim());
      if (!explain.checked) p.set("explain", "0");
      const target = "#/search?" + p.toString();
      state.asked = target;
      if (location.hash === target) route(); else location.hash = target;
    });
    const query = {
      q: (params.get("q") || "").trim() || undefined, memory_type: params.get("type"), domain: params.get("domain"),
      tags: params.get("tag"), project: params.get("project"), scope: params.get("scope"),
      explain: params.get("q") && params.get("explain") !== "0" ? "true" : undefined,
      limit: params.get("q") ? 20 : 50, ...agentQuery(),
    };
    // Trigger: a search this page did not see the person ask (opened from a link, which any
    // site can make, or the back button). Why: a miss kept in the Inbox is a question the person
    // had. Outcome: the hits are shown, no miss is kept.
    if (query.q && state.asked !== location.hash) query.keep_miss = "false";
    state.asked = null;
    const started = performance.now();
    let data;
    try {
      data = (await call("GET", "/v1/memories", { query })).data;
    } catch (err) {
      results.appendChild(errorBox(err));
      return;
    }
    const ms = performance.now() - started;
    const list = data.memories || [];
    results.appendChild(h("p.muted.count",
      query.q ? `${list.length} card${list.length === 1 ? "" : "s"} for “${query.q}” (${data.mode || "keyword"}, ${ms.toFixed(0)} ms)`
              : `${list.length} card${list.length === 1 ? "" : "s"} (newest paths first; type a query to rank)`));
    if (!list.length && data.miss_candidate) {
      results.appendChild(h("p.notice", "Nothing answers this yet; the miss was kept as an Inbox candidate: ",
        h("a", { href: "#/inbox" }, data.miss_candidate)));
    }
    for (const hit of list) results.appendChild(hitCard(hit, !!query.explain));
    if (data.warnings) for (const w of data.warnings) results.appendChild(h("p.notice", w));
    results.dataset.ms = (performance.now() - started).toFixed(1);   // asked, answered and drawn
  }

  function hitCard(hit, explained) {
    const ref = hit.id || hit.path;
    const meta = h("div.meta", typeBadge(hit.type), h("span.domain", hit.domain || ""),
      confidenceBadge(hit.confidence),
      hit.score !== undefined ? h("span.hit-score", `score ${Number(hit.score).toFixed(2)}`) : null,
      hit.age ? h("span.age", `state, ${hit.age} old`) : null,
      hit.status && hit.status !== "active" ? h("span.status", hit.status) : null);
    const tags = (hit.tags || []).length ? h("div.tags", hit.tags.map((t) => h("a.tag", {
      href: "#/search?tag=" + encodeURIComponent(t) }, "#" + t))) : null;
    const article = h("article.hit", h("h2", cardLink(ref, hit.title)), meta,
      hit.snippet ? h("p.snippet", hit.snippet) : null, tags, h("div.path", hit.path));
    if (explained && (hit.explain || hit.fusion)) {
      const rows = Object.entries(hit.explain || {}).map(([term, parts]) => h("tr", h("td", h("code", term)),
        h("td", Object.entries(parts).map(([k, v]) => `${k} ${Number(v).toFixed(3)}`).join(" · "))));
      const fusion = hit.fusion ? h("p", hit.fusion.weight !== undefined
        ? `hybrid: ${Number(hit.fusion.weight).toFixed(2)} × keyword ${Number(hit.fusion.keyword_norm).toFixed(2)} + ` +
          `${(1 - hit.fusion.weight).toFixed(2)} × vector ${Number(hit.fusion.vector_norm).toFixed(2)}`
        : `cosine ${Number(hit.fusion.vector).toFixed(3)}`) : null;
      article.appendChild(h("details.explain", h("summary", "why this ranks"), fusion,
        rows.length ? h("table", h("tbody", rows)) : h("p.muted", "no keyword terms matched")));
    }
    return article;
  }

  // ------------------------------------------------------------------ card

  async function pageCard(main, ref) {
    const agent = agentQuery();
    const { data: card } = await call("GET", "/v1/memories/" + encodeURIComponent(ref), { query: agent });
    if (card.raw !== undefined) {   // its frontmatter does not parse (cards.UnparsedCard): its text, and what to fix
      main.append(h("header.card-head", h("h1#card-title", card.path), h("div.path", card.path)),
        h("p.notice", card.warning),
        h("section.body.panel", h("h2.section", "The file as it is"), h("div.md", h("pre.raw", card.raw))));
      return;
    }
    const refNow = card.id || card.path;
    const action = actionOf(card.confidence);
    const head = h("header.card-head",
      h("h1#card-title", card.title),
      h("div.meta", typeBadge(card.type), h("span.domain", card.domain || ""),
        card.status ? h("span.status", card.status) : null,
        card.frontmatter && card.frontmatter.scope === "agent" ? h("span.scope", "private to " + card.frontmatter.agent) : null,
        card.age ? h("span.age", `state, ${card.age} old`) : null),
      h("div.path", card.path));
    const actionBox = h("section.action.panel.action-" + action.key,
      h("div.big", action.text),
      h("div", confidenceBadge(card.confidence), h("span.muted", ` (stored ${conf(card.stored_confidence)})`)),
      h("p.muted", "What an agent does with this card at its confidence: ≥ 0.80 apply, 0.50–0.79 apply and verify, ",
        "below 0.50 reference only."),
      h("div.buttons",
        h("button", { type: "button", onclick: () => feedback("used") }, "It helped (used)"),
        h("button", { type: "button", onclick: () => feedback("rejected") }, "It was wrong (rejected)"),
        h("a.button", { href: "#/graph?focus=" + encodeURIComponent(card.path) + "&depth=2" }, "Show in graph")));
    async function feedback(outcome) {
      try {
        const { data } = await call("POST", "/v1/memories/" + encodeURIComponent(refNow) + "/feedback",
                                    { body: { outcome, ...agent } });
        toast(`Recorded ${outcome}: confidence ${conf(data.before)} → ${conf(data.after)}`);
        route();
      } catch (err) { toast(err.message, "bad"); }
    }
    // The body's own first heading is usually the title again (as `create` writes it): not shown twice.
    const shown = card.body.replace(/^\s*# (.*)\n?/, (line, text) => text.trim() === card.title ? "" : line);
    const body = h("section.body.panel", h("h2.section", "Body"), window.GardenMarkdown.render(shown));
    const front = h("section.front.panel", h("h2.section", "Frontmatter"),
      h("table.kv", h("tbody", Object.entries(card.frontmatter || {}).map(([k, v]) => h("tr", h("th", k),
        h("td", typeof v === "string" ? v : JSON.stringify(v)))))));
    const links = h("section.links.panel", h("h2.section", "Links"), h("p.muted", "loading…"));
    const history = h("section.history.panel", h("h2.section", "History"), h("p.muted", "loading…"));
    const edit = editPanel(card, refNow, agent);
    main.append(head, h("div.card-grid", h("div.col", actionBox, body, edit), h("div.col", front, links, history)));
    loadLinks(links, refNow, agent);
    loadHistory(history, refNow, agent);
  }

  async function loadLinks(box, ref, agent) {
    try {
      const { data } = await call("GET", "/cards/" + encodeURIComponent(ref) + "/links", { query: agent });
      clear(box).appendChild(h("h2.section", "Links"));
      const row = (l, dir) => {   // each link names the card at its other end (path, title; missing)
        const name = l.path && !l.missing ? cardLink(l.id || l.path, l.title || l.path)
                                          : h("span.broken", `${l.wikilink || l.id || "?"} (missing)`);
        return h("li", h("span.rel", `${dir === "out" ? "→" : "←"} ${l.rel}`), " ", name,
          l.weight !== undefined ? h("span.muted", ` ${Number(l.weight).toFixed(2)}`) : null,
          // A link to a card that no longer exists is removed by the id or name it holds (doctor's fix).
          dir === "out" && (l.path || l.missing) ? h("button.quiet.small.unlink", { type: "button", title: "remove this link",
            onclick: () => linkAction("unlink", { to: l.missing ? (l.id || l.wikilink) : (l.id || l.path),
                                                  rel: l.rel, ...agent }) }, "unlink") : null,
          l.reason ? h("div.muted", l.reason) : null);
      };
      const linkAction = async (what, body) => {
        try {
          await call("POST", "/cards/" + encodeURIComponent(ref) + "/" + what, { body });
          toast(what === "link" ? "Linked" : "Unlinked");
          route();
        } catch (err) { toast(err.message, "bad"); }
      };
      const vocab = await vocabulary();
      const to = h("input", { type: "text", name: "to", placeholder: "card to link to: search…", autocomplete: "off",
                              list: "link-targets" });
      const targets = h("datalist#link-targets");
      to.addEventListener("input", debounce(async () => {
        if (to.value.trim().length < 2) return;
        try {
          const { data: found } = await call("GET", "/v1/memories",
                                             { query: { q: to.value.trim(), limit: 8, keep_miss: "false", ...agent } });
          clear(targets);
          for (const m of found.memories || []) targets.appendChild(h("option", { value: m.path }, m.title));
        } catch (_) { /* the list stays as it was */ }
      }, 250));
      const rel = select("rel", vocab.relations || ["related"], "related");
      const weight = h("input", { type: "number", name: "weight", min: "0", max: "1", step: "0.1", value: "0.8" });
      const linkForm = h("form.link-form", field("Link to", to), targets,
        h("div.row", field("Relation", rel), field("Weight", weight),
          h("button", { type: "submit" }, "Link")));
      linkForm.addEventListener("submit", (ev) => {
        ev.preventDefault();
        if (to.value.trim()) linkAction("link", { to: to.value.trim(), rel: rel.value, weight: Number(weight.value), ...agent });
      });
      box.append(h("h3", `Out (${data.outgoing.length})`),
        data.outgoing.length ? h("ul.linklist", data.outgoing.map((l) => row(l, "out"))) : h("p.muted", "none"),
        h("h3", `In (${data.incoming.length})`),
        data.incoming.length ? h("ul.linklist", data.incoming.map((l) => row(l, "in"))) : h("p.muted", "none"),
        linkForm);
    } catch (err) { clear(box).append(h("h2.section", "Links"), errorBox(err)); }
  }

  async function loadHistory(box, ref, agent) {
    try {
      const { data } = await call("GET", "/cards/" + encodeURIComponent(ref) + "/history", { query: agent });
      clear(box).appendChild(h("h2.section", `History (${data.entries.length})`));
      const owner = state.session.owner;
      for (const e of data.entries) {
        const item = h("div.event", h("div.event-head", h("strong", e.event), " ", h("span.muted", when(e.ts)),
          e.actor ? h("span.muted", ` · ${e.actor}`) : null, " ", h("code.eid", (e.eid || "").slice(0, 8))));
        const details = Object.entries(e.details || {}).filter(([k]) => !["files"].includes(k));
        if (details.length) item.appendChild(h("div.muted.small", details.map(([k, v]) =>
          `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`).join(" · ")));
        if (e.diff) item.appendChild(diffView(e.diff));
        if (owner && e.files && e.files.length) {
          item.appendChild(h("button.quiet.undo", { type: "button", dataset: { eid: e.eid },
            onclick: () => undoEvent(e.eid) }, "Undo this"));
        }
        box.appendChild(item);
      }
    } catch (err) { clear(box).append(h("h2.section", "History"), errorBox(err)); }
  }

  function diffView(text) {
    const pre = h("pre.diff");
    for (const line of text.split("\n")) {
      const cls = line.startsWith("+") && !line.startsWith("+++") ? "add"
        : line.startsWith("-") && !line.startsWith("---") ? "del" : line.startsWith("@@") ? "hunk" : "ctx";
      pre.appendChild(h("span." + cls, line + "\n"));
    }
    return pre;
  }

  async function undoEvent(eid, force) {
    try {
      const { data } = await call("POST", "/events/" + encodeURIComponent(eid) + "/undo", { body: force ? { force: true } : {} });
      if (data.already_undone_by !== null && data.already_undone_by !== undefined && !data.event) {
        toast("Already undone; nothing changed.");
      } else {
        const relinked = (data.relinked || []).length;
        const putBack = data.files.length - data.removed.length - relinked;
        toast(`Undone: ${data.undone_event} (${putBack} file${putBack === 1 ? "" : "s"} put back` +
              (data.removed.length ? `, ${data.removed.length} removed` : "") +
              (relinked ? `, ${relinked} relinked)` : ")"));
      }
      route();
    } catch (err) {
      if (err.code === "CONFLICT" && !force &&
          confirm(`${err.message}\n\nOverwrite the later changes and undo anyway?`)) return undoEvent(eid, true);
      toast(err.message, "bad");
    }
  }

  function editPanel(card, ref, agent) {
    const fm = card.frontmatter || {};
    const vocabTypes = (state.vocabulary && state.vocabulary.types) || [];
    const title = h("input", { type: "text", name: "title", value: card.title || "" });
    const tags = h("input", { type: "text", name: "tags", value: (card.tags || []).join(", ") });
    const kind = select("kind", vocabTypes.includes(card.type) ? vocabTypes : [card.type, ...vocabTypes], card.type);
    const status = h("input", { type: "text", name: "status", value: card.status || "", list: "statuses" });
    const importance = select("importance", ["1", "2", "3", "4", "5"], fm.importance ? String(fm.importance) : "", "—");
    const body = h("textarea", { name: "body", rows: 14, spellcheck: "false" });
    body.value = card.body.replace(/^\n+/, "");
    const out = h("div.out");
    const form = h("form#edit",
      field("Title", title), field("Tags", tags, "comma-separated"),
      h("div.row", field("Kind", kind), field("Status", status), field("Importance", importance)),
      h("datalist#statuses", ["active", "archived", "superseded"].map((s) => h("option", { value: s }))),
      field("Body (Markdown)", body),
      h("div.buttons", h("button.primary", { type: "submit" }, "Save"),
        h("button.danger", { type: "button", onclick: previewDelete }, "Delete…")),
      h("p.muted.small", `Saved only if the file is still as you opened it (hash ${card.hash.slice(0, 12)}…).`),
      out);
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      clear(out);
      const patch = {};
      const newTags = tags.value.split(",").map((t) => t.trim()).filter(Boolean);
      if (title.value.trim() !== card.title) patch.title = title.value.trim();
      if (newTags.join(",") !== (card.tags || []).join(",")) patch.tags = newTags;
      if (kind.value !== card.type) patch.memory_type = kind.value;
      if (status.value.trim() && status.value.trim() !== (card.status || "")) patch.status = status.value.trim();
      if (importance.value && importance.value !== String(fm.importance || "")) patch.importance = Number(importance.value);
      if (body.value !== card.body.replace(/^\n+/, "")) patch.content = body.value;
      if (!Object.keys(patch).length) { out.appendChild(h("p.notice", "Nothing changed.")); return; }
      try {
        const { data } = await call("PATCH", "/v1/memories/" + encodeURIComponent(ref),
                                    { body: { ...patch, ...agent }, ifMatch: card.hash });
        toast(`Saved: ${data.changed.join(", ")}`);
        location.hash = "#/card/" + encodeURIComponent(data.memory_id || data.path);
        route();
      } catch (err) {
        if (err.code === "CONFLICT") {
          out.appendChild(h("div.error.conflict", { role: "alert" },
            h("strong", "Conflict: "), "this card changed since you opened it (another agent, another tab, or an ",
            "edit in Obsidian). Nothing was saved. Your edits are still in the form: copy what you need, then ",
            h("a", { href: location.hash, onclick: (e) => { e.preventDefault(); route(); } }, "reload the card"),
            " and make them again.", h("div.muted.small", err.message)));
        } else {
          out.appendChild(errorBox(err));
        }
      }
    });

    async function previewDelete() {
      clear(out);
      try {
        const { data } = await call("DELETE", "/v1/memories/" + encodeURIComponent(ref),
                                    { query: { dry_run: "true", ...agent } });
        const confirmBox = h("div.panel.warn#delete-preview",
          h("p", h("strong", "Delete “" + data.title + "”?"), ` (${data.path})`),
          data.cascaded.length
            ? h("div", h("p", `The links to it will be removed from ${data.cascaded.length} card(s):`),
                h("ul", data.cascaded.map((p) => h("li", cardLink(p, p)))))
            : h("p.muted", "No other card links to it."),
          h("p.muted", "The whole file goes into the log: Undo brings it back."),
          h("div.buttons",
            h("button.danger#confirm-delete", { type: "button", onclick: doDelete }, "Delete"),
            h("button.quiet", { type: "button", onclick: () => clear(out) }, "Cancel")));
        out.appendChild(confirmBox);
      } catch (err) { out.appendChild(errorBox(err)); }
    }

    async function doDelete() {
      try {
        const { data } = await call("DELETE", "/v1/memories/" + encodeURIComponent(ref),
                                    { query: agent, ifMatch: card.hash });
        const main = clear($("#main"));
        main.appendChild(h("section.panel",
          h("h1", "Deleted"), h("p", `“${data.title}” was deleted`,
            data.cascaded.length ? `, and the links to it from ${data.cascaded.length} card(s)` : "", "."),
          state.session.owner && data.event ? h("button.primary", { type: "button", onclick: async () => {
            await undoEvent(data.event);
            location.hash = "#/card/" + encodeURIComponent(data.memory_id || data.path);
          } }, "Undo the delete") : null,
          h("p", h("a", { href: "#/search" }, "Back to search"))));
      } catch (err) {
        if (err.code === "CONFLICT") {
          out.appendChild(h("div.error.conflict", { role: "alert" }, h("strong", "Conflict: "),
            "the card changed since you opened it; nothing was deleted. Reload it and look again."));
        } else out.appendChild(errorBox(err));
      }
    }

    return h("details.edit.panel", h("summary", h("span.section", "Edit or delete")), form);
  }

  // ------------------------------------------------------------------ force ingest

  async function pageIngest(main) {
    const vocab = await vocabulary();
    const content = h("textarea#content", { name: "content", rows: 6, required: true,
      placeholder: "The statement to keep, exactly as written. 例: 本番DBの接続上限は 200" });
    const title = h("input", { type: "text", name: "title", placeholder: "(default: the first line)" });
    const kind = select("kind", vocab.types, vocab.types.includes("fact") ? "fact" : vocab.types[0]);
    const domain = select("domain", vocab.domains, vocab.domains.includes("general") ? "general" : vocab.domains[0]);
    const tags = h("input", { type: "text", name: "tags", placeholder: "tag, tag" });
    const project = h("input", { type: "text", name: "project" });
    const importance = select("importance", ["1", "2", "3", "4", "5"], "", "—");
    const scope = select("scope", ["global", "agent"], "global");
    const agentName = h("input", { type: "text", name: "agent", placeholder: "agent name" });
    const out = h("div.out");
    const form = h("form#ingest.panel",
      h("h1", "Force ingest"),
      h("p.muted", "Stored exactly as given, with the kind and tags you choose: no analysis, no splitting ",
        "(force ingest). A fact or state still supersedes the active one on the same subject, as every store does."),
      field("Statement", content), field("Title", title),
      h("div.row", field("Kind", kind), field("Domain", domain), field("Importance", importance)),
      field("Tags", tags, "comma-separated"), field("Project", project),
      state.session.owner ? h("div.row", field("Scope", scope), field("Agent (scope agent)", agentName)) : null,
      h("button.primary", { type: "submit" }, "Store"), out);
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      clear(out);
      const body = { content: content.value, memory_type: kind.value, domain: domain.value,
                     tags: tags.value.split(",").map((t) => t.trim()).filter(Boolean) };
      if (title.value.trim()) body.title = title.value.trim();
      if (project.value.trim()) body.project = project.value.trim();
      if (importance.value) body.importance = Number(importance.value);
      if (state.session.owner) {
        if (scope.value === "agent") { body.scope = "agent"; body.agent_id = agentName.value.trim() || undefined; }
        else Object.assign(body, agentQuery());
      }
      try {
        const { data } = await call("POST", "/v1/memories", { body });
        const insights = data.insights || {};
        const named = (x) => cardLink(x.id || x.path, x.title || x.path);
        out.appendChild(h("div.panel.ok#ingested",
          h("p", data.created === false ? `Not stored (${data.skipped_reason || "already there"}): ` : "Stored: ",
            data.path ? cardLink(data.memory_id || data.path, body.title || content.value.split("\n")[0]) : null,
            data.path ? h("span.path", " " + data.path) : null),
          (insights.supersedes || []).length ? h("p", "It supersedes: ", insights.supersedes.map((x) => [named(x), " "]))
            : null,
          (insights.potential_duplicates || []).length ? h("p.notice", "Similar cards exist: ",
            insights.potential_duplicates.map((x) => [named(x), " "])) : null,
          (insights.contradictions || []).length ? h("p.notice", "It may contradict: ",
            insights.contradictions.map((x) => [named(x), " "])) : null));
        content.value = "";
      } catch (err) { out.appendChild(errorBox(err)); }
    });
    main.appendChild(form);
  }

  // ------------------------------------------------------------------ inbox

  async function pageInbox(main, _arg, params) {
    if (!state.session.owner) {
      main.appendChild(h("section.panel", h("h1", "Inbox"), h("p", "Inbox triage is for the owner's key.")));
      return;
    }
    const closed = params.get("closed") === "1";
    const vocab = await vocabulary();
    const { data } = await call("GET", "/inbox", { query: { include_closed: closed ? "true" : undefined } });
    main.appendChild(h("div.page-head", h("h1", `Inbox (${data.count})`),
      h("a", { href: closed ? "#/inbox" : "#/inbox?closed=1" },
        closed ? "hide closed (rejected, merged, promoted)" : `show closed: rejected, merged, promoted (${data.closed})`)));
    if (!data.candidates.length) main.appendChild(h("p.muted", "Nothing waits for a decision."));
    for (const c of data.candidates) main.appendChild(candidateCard(c, vocab));
  }

  function candidateCard(c, vocab) {
    const out = h("div.out");
    const ref = c.id || c.path;
    const title = h("input", { type: "text", value: c.title.replace(/^Search miss:\s*/, "") });
    const type = select("type", vocab.types, vocab.types.includes(c.type) ? c.type : vocab.types[0]);
    const domain = select("domain", vocab.domains, vocab.domains.includes(c.domain) ? c.domain : vocab.domains[0]);
    const into = h("input", { type: "text", placeholder: "card to merge into: search…", autocomplete: "off",
                              list: "merge-" + c.path.replace(/\W/g, "_") });
    const suggestions = h("datalist#merge-" + c.path.replace(/\W/g, "_"));
    const reason = h("input", { type: "text", placeholder: "why (optional)" });
    into.addEventListener("input", debounce(async () => {
      const text = into.value.trim();
      if (text.length < 2) return;
      try {
        const { data } = await call("GET", "/v1/memories", { query: { q: text, limit: 8, keep_miss: "false" } });
        clear(suggestions);
        for (const m of data.memories || []) suggestions.appendChild(h("option", { value: m.path }, m.title));
      } catch (_) { /* a search that fails leaves the list as it was */ }
    }, 250));
    const act = async (what, body) => {
      clear(out);
      try {
        const { data } = await call("POST", `/inbox/${encodeURIComponent(ref)}/${what}`, { body });
        const eid = data.event;
        toast(what === "promote" ? `Promoted to ${data.path}` : what === "merge"
          ? `Merged into ${data.into.title}` : "Rejected");
        article.replaceWith(h("article.candidate.done.panel", h("p",
          what === "promote" ? ["Promoted: ", cardLink(data.id || data.path, data.title)]
            : what === "merge" ? ["Merged into ", cardLink(data.into.id || data.into.path, data.into.title)]
              : ["Rejected: ", c.title]),
          eid ? h("button.quiet", { type: "button", onclick: () => undoEvent(eid) }, "Undo") : null));
      } catch (err) { out.appendChild(errorBox(err)); }
    };
    const article = h("article.candidate.panel", { dataset: { path: c.path } },
      h("h2", c.title),
      h("div.meta", typeBadge(c.type), h("span.domain", c.domain || ""), h("span.source", c.source || "inbox"),
        h("span", `seen ${c.seen}×`), h("span", `score ${Number(c.score).toFixed(2)}`),
        !c.open ? h("span.status", c.status) : null),
      c.reasons.length ? h("p.muted.small", c.reasons.join(" · ")) : null,
      c.problem ? h("div.part", h("h3", "Problem"), window.GardenMarkdown.render(c.problem)) : null,
      c.solution ? h("div.part", h("h3", "Solution"), window.GardenMarkdown.render(c.solution)) : null,
      c.evidence.length ? h("div.part", h("h3", "Evidence"), h("ul.evidence", c.evidence.map((e) => h("li", e)))) : null,
      h("div.path", c.path),
      c.open ? h("div.triage",
        h("div.row", field("Title", title), field("Type", type), field("Domain", domain),
          h("button.primary.promote", { type: "button", onclick: () => act("promote",
            { title: title.value.trim() || undefined, type: type.value, domain: domain.value }) }, "Promote")),
        h("div.row", field("Merge into", into), suggestions,
          h("button.merge", { type: "button", onclick: () => into.value.trim()
            ? act("merge", { into: into.value.trim() }) : toast("Name the card to merge into", "bad") }, "Merge")),
        h("div.row", field("Reject", reason),
          h("button.danger.reject", { type: "button", onclick: () => act("reject",
            { reason: reason.value.trim() || undefined }) }, "Reject"))) : null,
      out);
    return article;
  }

  function debounce(fn, ms) {
    let t = null;
    return (...args) => { clearTimeout(t); t = setTimeout(() => fn(...args), ms); };
  }

  // ------------------------------------------------------------------ graph

  async function pageGraph(main, _arg, params) {
    const started = performance.now();
    const canvas = h("canvas#graph-canvas", { "aria-label": "graph of cards" });
    const tip = h("div.tooltip", { hidden: true });
    const count = h("span#graph-count.muted", "loading…");
    const type = select("type", [], "", "any type");
    const domain = select("domain", [], "", "any domain");
    const project = select("project", [], "", "any project");
    const focus = h("input", { type: "text", name: "focus", value: params.get("focus") || "",
                               placeholder: "path or id" });
    const depth = select("depth", ["1", "2", "3"], params.get("depth") || "2");
    const legend = h("div.legend");
    const form = h("form#graph-filters.panel.filters",
      field("Type", type), field("Domain", domain), field("Project", project),
      field("Around card", focus), field("Depth", depth), h("button", { type: "submit" }, "Apply"), count);
    main.append(form, h("div.graph-wrap", canvas, tip), legend);
    const { data } = await call("GET", "/graph", { query: agentQuery() });
    const fetched = performance.now();
    const uniq = (key) => [...new Set(data.nodes.map((n) => n[key]).filter(Boolean))].sort();
    for (const [sel, key] of [[type, "type"], [domain, "domain"], [project, "project"]]) {
      for (const v of uniq(key)) sel.appendChild(h("option", { value: v, selected: params.get(key) === v }, v));
    }
    for (const t of uniq("type")) {
      const dot = h("span.dot");
      dot.style.background = window.GardenGraph.colourOf(t);
      legend.appendChild(h("span.legend-item", dot, t));
    }
    legend.appendChild(h("span.muted", " · size: confidence · click a node to open its card · drag to pan, wheel to zoom"));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const p = new URLSearchParams();
      for (const [k, el] of [["type", type], ["domain", domain], ["project", project], ["focus", focus],
                             ["depth", depth]]) if (el.value.trim()) p.set(k, el.value.trim());
      location.hash = "#/graph?" + p.toString();
    });
    // Which nodes: the filters, then (with a focus card) its neighbourhood of the filtered graph.
    let nodes = data.nodes.map((n) => ({ ...n, key: n.path }));
    const want = { type: params.get("type"), domain: params.get("domain"), project: params.get("project") };
    nodes = nodes.filter((n) => (!want.type || n.type === want.type) && (!want.domain || n.domain === want.domain) &&
      (!want.project || n.project === want.project));
    const keep = new Set(nodes.map((n) => n.key));
    let edges = data.edges.map((e) => ({ source: e.source_path, target: e.target_path, rel: e.rel }))
      .filter((e) => keep.has(e.source) && keep.has(e.target));
    let focusKey = null;
    const wanted = (params.get("focus") || "").trim();
    if (wanted) {
      const f = nodes.find((n) => n.path === wanted || n.id === wanted || n.path === "Playbooks/" + wanted + ".md" ||
        n.title === wanted);
      if (!f) {
        main.insertBefore(h("p.notice", `No visible card “${wanted}” in this graph; showing everything.`), form.nextSibling);
      } else {
        focusKey = f.key;
        const near = window.GardenGraph.neighbourhood(edges, f.key, Math.max(1, Math.min(3, Number(depth.value) || 2)));
        nodes = nodes.filter((n) => near.has(n.key));
        edges = edges.filter((e) => near.has(e.source) && near.has(e.target));
      }
    }
    count.textContent = `${nodes.length} nodes · ${edges.length} links`;
    count.dataset.nodes = String(nodes.length);
    count.dataset.edges = String(edges.length);
    const view = new window.GardenGraph.GraphView(canvas, tip, (d) => { location.hash = "#/card/" + encodeURIComponent(d.id || d.path); });
    state.view = { leave: () => view.stop() };
    view.onFirstFrame = () => {
      // Interactive from here: the nodes are drawn and clicks, hover, pan and zoom answer.
      const ready = performance.now();
      canvas.dataset.readyMs = (ready - started).toFixed(0);
      canvas.dataset.fetchMs = (fetched - started).toFixed(0);
      canvas.dataset.ready = "1";
    };
    view.onSettled = () => {
      canvas.dataset.settledMs = (performance.now() - started).toFixed(0);
      canvas.dataset.steps = String(view.steps);
    };
    view.setData(nodes, edges, focusKey);
    window.__gardenGraph = view;   // for the browser tests: the node positions as drawn
  }

  // ------------------------------------------------------------------ health

  async function pageHealth(main) {
    const agent = agentQuery();
    const [analysis, trends, graph] = await Promise.all([call("GET", "/analyze", { query: agent }),
      call("GET", "/trends", { query: agent }), call("GET", "/graph", { query: agent })]);
    // Issues name cards by id (or path): show their titles.
    state.titles = new Map();
    for (const n of graph.data.nodes) { if (n.id) state.titles.set(n.id, n.title); state.titles.set(n.path, n.title); }
    const a = analysis.data, t = trends.data;
    const score = h("div.score", { dataset: { score: a.health_score } }, String(a.health_score));
    score.classList.add(a.health_score >= 80 ? "good" : a.health_score >= 50 ? "fair" : "poor");
    main.appendChild(h("div.health-head.panel", score,
      h("div", h("h1", "Health"), h("p", `${a.total} cards · ${a.stats.links} links · ${a.issues.length} kind(s) of issue`),
        a.suggestions.map((s) => h("p.muted", s)))));
    const issues = h("section.panel#issues", h("h2.section", "Issues"));
    if (!a.issues.length) issues.appendChild(h("p", "No issues found."));
    for (const issue of a.issues) issues.appendChild(issueView(issue));
    const confChart = window.GardenCharts.bars(
      t.confidence_bins.map((b) => ({ label: b.low.toFixed(1), title: `${b.low.toFixed(1)}–${b.high.toFixed(1)}`,
                                      count: b.count })),
      [{ key: "count", label: "cards", colour: "#2f80c9" }], { title: "Cards by confidence", showTotals: true });
    const rows = window.GardenCharts.feedbackRows(t.feedback);
    const fbChart = rows.length ? window.GardenCharts.bars(rows,
      [{ key: "used", label: "used", colour: "#3d8b37" }, { key: "rejected", label: "rejected", colour: "#d9534f" }],
      { title: "Feedback over time", xEvery: Math.max(1, Math.ceil(rows.length / 10)) }) : h("p.muted", "No feedback yet.");
    main.appendChild(h("div.card-grid",
      h("div.col", issues),
      h("div.col",
        h("section.panel#confidence-chart", h("h2.section", "Confidence"), confChart,
          h("p.muted", `apply ${t.by_action.apply} · apply and verify ${t.by_action.verify} · reference only ${t.by_action.reference}`)),
        h("section.panel#feedback-chart", h("h2.section", "Feedback"), fbChart,
          h("p.muted", `${t.feedback_total.used} used · ${t.feedback_total.rejected} rejected`)))));
  }

  const FIX = {
    orphan_memories: "add tags", low_connectivity: "link it", stale_memories: "review it",
    near_duplicates: "compare and merge", contradictions: "keep one true", broken_links: "fix the link",
    similar_tags: "rename the tag", unparseable_files: "fix the frontmatter",
  };

  function issueView(issue) {
    const box = h("div.issue.sev-" + issue.severity, { dataset: { type: issue.type } },
      h("div.issue-head", h("span.sev", issue.severity), " ", h("strong", issue.message)),
      h("p.muted.small", "Fix: " + issue.suggested_action));
    const fix = FIX[issue.type] || "open";
    if (issue.pairs && issue.type !== "similar_tags") {
      box.appendChild(h("ul", issue.pairs.map((p) => {
        const ids = p.ids || p;
        return h("li", cardLink(ids[0], shortRef(ids[0])), " ⟷ ", cardLink(ids[1], shortRef(ids[1])),
          p.similarity !== undefined ? h("span.muted", ` ${Number(p.similarity).toFixed(2)}`) : null,
          " ", h("a.fix", { href: "#/card/" + encodeURIComponent(ids[0]) }, fix));
      })));
    } else if (issue.groups) {
      box.appendChild(h("ul", issue.groups.map((g) => h("li", g.variants.map((v) =>
        [h("a.tag", { href: "#/search?tag=" + encodeURIComponent(v) }, "#" + v), " "]), h("span.muted", `keep ${g.keep}`)))));
    } else if (issue.links) {
      box.appendChild(h("ul", issue.links.map((l) => h("li", cardLink(l.source, l.source), ` → ${l.target} (${l.rel}) `,
        h("a.fix", { href: "#/card/" + encodeURIComponent(l.source) }, fix)))));
    } else {
      box.appendChild(h("ul.affected", issue.affected_memory_ids.slice(0, 12).map((id) => h("li",
        cardLink(id, shortRef(id)), " ", h("a.fix", { href: "#/card/" + encodeURIComponent(id) }, fix)))));
      if (issue.count > 12) box.appendChild(h("p.muted.small", `and ${issue.count - 12} more`));
    }
    return box;
  }

  function shortRef(ref) {
    const title = state.titles && state.titles.get(ref);
    if (title) return title;
    return /^[0-9a-f-]{36}$/.test(ref) ? ref.slice(0, 8) : ref.replace(/^Playbooks\//, "");
  }

  // ------------------------------------------------------------------ start

  async function boot() {
    $("#logout").addEventListener("click", logout);
    $("#as-agent").addEventListener("change", () => { state.vocabulary = null; route(); });
    window.addEventListener("hashchange", route);
    try {
      const { data } = await call("GET", "/session");
      startSession(data);
    } catch (err) {
      if (err.status !== 401) showLogin(err.message);
    }
  }

  document.addEventListener("DOMContentLoaded", boot);
})();
