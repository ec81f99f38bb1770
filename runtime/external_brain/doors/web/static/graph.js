/* The graph of cards on a <canvas>, laid out by a small force simulation of our own:
 * - nodes start on a sunflower spiral (even, deterministic), so the first frame is already usable;
 * - each animation frame runs as many simulation steps as fit in ~10 ms, then draws: the page
 *   stays interactive while the layout settles (it stops by itself when it has cooled);
 * - repulsion looks only at the nodes of nearby grid cells (a uniform grid rebuilt each step),
 *   so a step costs about O(n) rather than O(n^2); links pull like springs; a weak pull to the
 *   centre keeps parts together.
 * Nodes are coloured by type and sized by confidence. Click opens a card; drag pans; the wheel
 * zooms; hovering names the card. */
(function () {
  "use strict";

  const PALETTE = {
    troubleshooting: "#d9534f", decision: "#7b61c4", runbook: "#2f80c9", pattern: "#2a9d8f",
    checklist: "#e0a526", insight: "#e76f9c", fact: "#3d8b37", state: "#8a6d3b", episode: "#6c757d",
  };
  const EXTRA = ["#1b998b", "#c05746", "#5a6acf", "#b07d2b", "#8e44ad", "#16a085", "#7f8c8d", "#d35400"];

  function colourOf(type) {
    if (PALETTE[type]) return PALETTE[type];
    let h = 0;
    for (const ch of String(type || "")) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
    return EXTRA[h % EXTRA.length];
  }

  function radiusOf(confidence) {
    const c = typeof confidence === "number" ? confidence : 0.5;
    return 3 + 9 * Math.max(0, Math.min(1, c));
  }

  class GraphView {
    constructor(canvas, tooltip, onOpen) {
      this.canvas = canvas;
      this.tooltip = tooltip;
      this.onOpen = onOpen;
      this.ctx = canvas.getContext("2d");
      this.nodes = [];
      this.links = [];
      this.view = { x: 0, y: 0, k: 1 };
      this.alpha = 1;
      this.hover = null;
      this.frame = null;
      this.steps = 0;
      this.onSettled = null;
      this.onFirstFrame = null;
      this._bind();
    }

    /** Show `nodes` ({id, title, type, confidence, ...}) and `edges` ({source, target}, by id). */
    setData(nodes, edges, focusId) {
      const n = nodes.length;
      const golden = Math.PI * (3 - Math.sqrt(5));
      const spread = 14 * Math.sqrt(Math.max(1, n));
      this.nodes = nodes.map((d, i) => {
        const r = spread * Math.sqrt((i + 0.5) / Math.max(1, n));
        return { d, x: r * Math.cos(i * golden), y: r * Math.sin(i * golden), vx: 0, vy: 0,
                 r: radiusOf(d.confidence), colour: colourOf(d.type), degree: 0 };
      });
      const byId = new Map(this.nodes.map((node) => [node.d.key, node]));
      this.links = [];
      for (const e of edges) {
        const a = byId.get(e.source), b = byId.get(e.target);
        if (a && b && a !== b) { this.links.push({ a, b, rel: e.rel }); a.degree++; b.degree++; }
      }
      if (focusId && byId.get(focusId)) {
        const f = byId.get(focusId);
        f.focus = true;
        f.x = 0; f.y = 0;
      }
      this.alpha = 1;
      this.steps = 0;
      this.moved = false;
      this.fit();
      this._start();
    }

    /** Frame every node (until the person pans or zooms: then the view is theirs). */
    fit() {
      const w = this.canvas.clientWidth || 600, h = this.canvas.clientHeight || 400;
      if (!this.nodes.length) { this.view = { x: w / 2, y: h / 2, k: 1 }; return; }
      let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
      for (const p of this.nodes) {
        x0 = Math.min(x0, p.x - p.r); y0 = Math.min(y0, p.y - p.r);
        x1 = Math.max(x1, p.x + p.r); y1 = Math.max(y1, p.y + p.r);
      }
      const pad = 24, labels = this.nodes.length <= 60 ? 120 : 0;   // room for the names drawn beside nodes
      const k = Math.min((w - 2 * pad - labels) / Math.max(1, x1 - x0), (h - 2 * pad) / Math.max(1, y1 - y0));
      const kk = Math.max(0.03, Math.min(2, k));
      this.view = { x: w / 2 - ((x0 + x1) / 2) * kk - labels / 2, y: h / 2 - ((y0 + y1) / 2) * kk, k: kk };
    }

    stop() {
      if (this.frame) cancelAnimationFrame(this.frame);
      this.frame = null;
    }

    _start() {
      this.stop();
      const tick = () => {
        const until = performance.now() + 10;
        while (this.alpha > 0.02 && performance.now() < until) this.step();
        if (!this.moved) this.fit();
        this.draw();
        if (this.onFirstFrame) { const f = this.onFirstFrame; this.onFirstFrame = null; f(); }
        if (this.alpha > 0.02) this.frame = requestAnimationFrame(tick);
        else {
          this.frame = null;
          if (this.onSettled) { const f = this.onSettled; this.onSettled = null; f(); }
        }
      };
      this.frame = requestAnimationFrame(tick);
    }

    step() {
      // Forces as d3-force models them: many-body repulsion (strength / distance, cut off beyond
      // REACH so a step is about O(n)), springs along links, a weak pull toward the centre.
      const nodes = this.nodes, alpha = this.alpha;
      const REACH = 90, CHARGE = 60, GRAVITY = 0.006, SPRING = 0.06, DECAY = 0.55;
      const grid = new Map();
      for (const p of nodes) {
        const key = Math.floor(p.x / REACH) * 100003 + Math.floor(p.y / REACH);
        let bucket = grid.get(key);
        if (!bucket) grid.set(key, (bucket = []));
        bucket.push(p);
      }
      const reach2 = REACH * REACH;
      for (const p of nodes) {
        const cx = Math.floor(p.x / REACH), cy = Math.floor(p.y / REACH);
        for (let gx = cx - 1; gx <= cx + 1; gx++) {
          for (let gy = cy - 1; gy <= cy + 1; gy++) {
            const bucket = grid.get(gx * 100003 + gy);
            if (!bucket) continue;
            for (const q of bucket) {
              if (q === p) continue;
              let dx = p.x - q.x, dy = p.y - q.y;
              let d2 = dx * dx + dy * dy;
              if (d2 > reach2) continue;
              if (d2 < 1) { dx = (Math.random() - 0.5) * 2; dy = (Math.random() - 0.5) * 2; d2 = 1; }
              const f = (CHARGE * alpha) / d2;
              p.vx += dx * f;
              p.vy += dy * f;
            }
          }
        }
        p.vx -= p.x * GRAVITY * alpha;
        p.vy -= p.y * GRAVITY * alpha;
      }
      for (const l of this.links) {
        const dx = l.b.x - l.a.x, dy = l.b.y - l.a.y;
        const d = Math.sqrt(dx * dx + dy * dy) || 1;
        const want = 30 + l.a.r + l.b.r;
        const f = ((d - want) / d) * SPRING * alpha / Math.min(l.a.degree, l.b.degree);
        const wa = l.b.degree / (l.a.degree + l.b.degree), wb = 1 - wa;
        l.a.vx += dx * f * wa; l.a.vy += dy * f * wa;
        l.b.vx -= dx * f * wb; l.b.vy -= dy * f * wb;
      }
      for (const p of nodes) {
        p.vx *= DECAY; p.vy *= DECAY;
        p.x += p.vx; p.y += p.vy;
      }
      this.alpha *= 0.985;
      this.steps++;
    }

    toScreen(p) {
      return [this.view.x + p.x * this.view.k, this.view.y + p.y * this.view.k];
    }

    draw() {
      const c = this.canvas, ctx = this.ctx;
      const ratio = window.devicePixelRatio || 1;
      const w = c.clientWidth, h = c.clientHeight;
      if (c.width !== Math.round(w * ratio) || c.height !== Math.round(h * ratio)) {
        c.width = Math.round(w * ratio);
        c.height = Math.round(h * ratio);
      }
      ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
      ctx.clearRect(0, 0, w, h);
      const { x: ox, y: oy, k } = this.view;
      ctx.lineWidth = 1;
      ctx.strokeStyle = "rgba(120,130,140,0.35)";
      ctx.beginPath();
      for (const l of this.links) {
        ctx.moveTo(ox + l.a.x * k, oy + l.a.y * k);
        ctx.lineTo(ox + l.b.x * k, oy + l.b.y * k);
      }
      ctx.stroke();
      const scale = Math.max(0.6, Math.min(1.6, Math.sqrt(k)));
      for (const p of this.nodes) {
        const sx = ox + p.x * k, sy = oy + p.y * k;
        if (sx < -20 || sy < -20 || sx > w + 20 || sy > h + 20) continue;
        ctx.beginPath();
        ctx.arc(sx, sy, p.r * scale, 0, 2 * Math.PI);
        ctx.fillStyle = p.colour;
        ctx.fill();
        if (p === this.hover || p.focus) {
          ctx.lineWidth = 2.5;
          ctx.strokeStyle = "#111";
          ctx.stroke();
          ctx.lineWidth = 1;
        }
      }
      if (this.nodes.length <= 60 || k > 1.4) {
        ctx.fillStyle = getComputedStyle(c).color || "#222";
        ctx.font = "11px system-ui, sans-serif";
        for (const p of this.nodes) {
          const sx = ox + p.x * k, sy = oy + p.y * k;
          if (sx < 0 || sy < 0 || sx > w || sy > h) continue;
          ctx.fillText(shorten(p.d.title, 28), sx + p.r * scale + 3, sy + 4);
        }
      }
    }

    nodeAt(mx, my) {
      const { x: ox, y: oy, k } = this.view;
      const scale = Math.max(0.6, Math.min(1.6, Math.sqrt(k)));
      let best = null, bestD = Infinity;
      for (const p of this.nodes) {
        const dx = ox + p.x * k - mx, dy = oy + p.y * k - my;
        const d = dx * dx + dy * dy;
        const r = p.r * scale + 3;
        if (d <= r * r && d < bestD) { best = p; bestD = d; }
      }
      return best;
    }

    _bind() {
      const c = this.canvas;
      let drag = null;
      const pos = (ev) => { const b = c.getBoundingClientRect(); return [ev.clientX - b.left, ev.clientY - b.top]; };
      c.addEventListener("pointerdown", (ev) => {
        const [mx, my] = pos(ev);
        drag = { mx, my, vx: this.view.x, vy: this.view.y, moved: false, node: this.nodeAt(mx, my) };
        c.setPointerCapture(ev.pointerId);
      });
      c.addEventListener("pointermove", (ev) => {
        const [mx, my] = pos(ev);
        if (drag) {
          if (Math.abs(mx - drag.mx) + Math.abs(my - drag.my) > 4) drag.moved = true;
          if (drag.moved) {
            this.moved = true;
            this.view.x = drag.vx + (mx - drag.mx);
            this.view.y = drag.vy + (my - drag.my);
            if (!this.frame) this.draw();
          }
          return;
        }
        const hit = this.nodeAt(mx, my);
        if (hit !== this.hover) {
          this.hover = hit;
          c.style.cursor = hit ? "pointer" : "grab";
          if (!this.frame) this.draw();
        }
        if (hit) {
          this.tooltip.hidden = false;
          this.tooltip.textContent = `${hit.d.title} · ${hit.d.type || "?"} · confidence ${fmt(hit.d.confidence)}`;
          this.tooltip.style.left = Math.min(mx + 14, c.clientWidth - 220) + "px";
          this.tooltip.style.top = my + 14 + "px";
        } else {
          this.tooltip.hidden = true;
        }
      });
      c.addEventListener("pointerup", (ev) => {
        const d = drag;
        drag = null;
        if (d && !d.moved && d.node) this.onOpen(d.node.d);
      });
      c.addEventListener("pointerleave", () => { this.tooltip.hidden = true; });
      c.addEventListener("wheel", (ev) => {
        ev.preventDefault();
        const [mx, my] = pos(ev);
        const factor = Math.exp(-ev.deltaY * 0.0015);
        const k = Math.max(0.03, Math.min(8, this.view.k * factor));
        this.moved = true;
        this.view.x = mx - ((mx - this.view.x) * k) / this.view.k;
        this.view.y = my - ((my - this.view.y) * k) / this.view.k;
        this.view.k = k;
        if (!this.frame) this.draw();
      }, { passive: false });
    }
  }

  function fmt(c) { return typeof c === "number" ? c.toFixed(2) : "—"; }
  function shorten(s, n) { s = String(s || ""); return s.length > n ? s.slice(0, n - 1) + "…" : s; }

  /** The nodes within `depth` links of `focus` (links taken both ways), as a Set of keys. */
  function neighbourhood(edges, focus, depth) {
    const adj = new Map();
    for (const e of edges) {
      if (!adj.has(e.source)) adj.set(e.source, []);
      if (!adj.has(e.target)) adj.set(e.target, []);
      adj.get(e.source).push(e.target);
      adj.get(e.target).push(e.source);
    }
    const seen = new Set([focus]);
    let frontier = [focus];
    for (let d = 0; d < depth && frontier.length; d++) {
      const next = [];
      for (const key of frontier) for (const other of adj.get(key) || []) {
        if (!seen.has(other)) { seen.add(other); next.push(other); }
      }
      frontier = next;
    }
    return seen;
  }

  window.GardenGraph = { GraphView, colourOf, radiusOf, neighbourhood };
})();
