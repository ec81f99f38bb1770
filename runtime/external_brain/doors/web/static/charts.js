/* Small SVG charts of our own (no library): bars with labels, drawn with createElementNS and
 * text nodes only. Each chart scales to its container's width (viewBox). */
(function () {
  "use strict";

  const NS = "http://www.w3.org/2000/svg";

  function svg(tag, attrs, text) {
    const node = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  /** Vertical bars. `series`: [{key, label, colour}]; `rows`: [{label, title?, <key>: number}].
   * Several series stack. Returns an <svg>. */
  function bars(rows, series, opts) {
    const o = Object.assign({ width: 640, height: 220, yLabel: "", xEvery: 1 }, opts || {});
    const left = 36, right = 8, top = 12, bottom = 34;
    const plotW = o.width - left - right, plotH = o.height - top - bottom;
    const totals = rows.map((r) => series.reduce((s, x) => s + (r[x.key] || 0), 0));
    const max = Math.max(1, ...totals);
    const step = niceStep(max);
    const top_ = Math.ceil(max / step) * step;
    const root = svg("svg", { viewBox: `0 0 ${o.width} ${o.height}`, class: "chart", role: "img",
                              "aria-label": o.title || "chart" });
    if (o.title) root.appendChild(svg("title", {}, o.title));
    for (let v = 0; v <= top_; v += step) {
      const y = top + plotH - (v / top_) * plotH;
      root.appendChild(svg("line", { x1: left, x2: o.width - right, y1: y, y2: y, class: "grid" }));
      root.appendChild(svg("text", { x: left - 4, y: y + 3, class: "axis", "text-anchor": "end" }, v));
    }
    const slot = plotW / Math.max(1, rows.length);
    const barW = Math.max(1, Math.min(40, slot * 0.78));
    rows.forEach((row, i) => {
      let y = top + plotH;
      const x = left + i * slot + (slot - barW) / 2;
      for (const s of series) {
        const value = row[s.key] || 0;
        if (!value) continue;
        const h = (value / top_) * plotH;
        y -= h;
        const rect = svg("rect", { x: x.toFixed(1), y: y.toFixed(1), width: barW.toFixed(1), height: h.toFixed(1),
                                   class: "bar " + (s.cls || ""), fill: s.colour });
        rect.appendChild(svg("title", {}, `${row.title || row.label}: ${value} ${s.label}`));
        root.appendChild(rect);
      }
      if (i % o.xEvery === 0) {
        root.appendChild(svg("text", { x: (x + barW / 2).toFixed(1), y: o.height - bottom + 14, class: "axis",
                                       "text-anchor": "middle" }, row.label));
      }
      if (o.showTotals && totals[i]) {
        root.appendChild(svg("text", { x: (x + barW / 2).toFixed(1), y: (y - 3).toFixed(1), class: "value",
                                       "text-anchor": "middle" }, totals[i]));
      }
    });
    root.appendChild(svg("line", { x1: left, x2: o.width - right, y1: top + plotH, y2: top + plotH, class: "base" }));
    if (series.length > 1) {
      let lx = left;
      for (const s of series) {
        root.appendChild(svg("rect", { x: lx, y: o.height - 12, width: 10, height: 10, fill: s.colour }));
        const label = svg("text", { x: lx + 14, y: o.height - 3, class: "axis" }, s.label);
        root.appendChild(label);
        lx += 24 + s.label.length * 7;
      }
    }
    return root;
  }

  function niceStep(max) {
    const raw = max / 4;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * mag >= raw) return Math.max(1, m * mag);
    return Math.max(1, 10 * mag);
  }

  /** Feedback per day as bars per day, or per week when the span is long. */
  function feedbackRows(days) {
    if (!days.length) return [];
    const first = new Date(days[0].day + "T00:00:00Z");
    const last = new Date(days[days.length - 1].day + "T00:00:00Z");
    const span = Math.round((last - first) / 86400000) + 1;
    const byDay = new Map(days.map((d) => [d.day, d]));
    const rows = [];
    const weekly = span > 45;
    const stride = weekly ? 7 : 1;
    for (let t = first.getTime(); t <= last.getTime(); t += stride * 86400000) {
      let used = 0, rejected = 0;
      for (let k = 0; k < stride; k++) {
        const key = new Date(t + k * 86400000).toISOString().slice(0, 10);
        const d = byDay.get(key);
        if (d) { used += d.used; rejected += d.rejected; }
      }
      const day = new Date(t).toISOString().slice(0, 10);
      rows.push({ label: day.slice(5), title: (weekly ? "week of " : "") + day, used, rejected });
    }
    return rows;
  }

  window.GardenCharts = { bars, feedbackRows };
})();
