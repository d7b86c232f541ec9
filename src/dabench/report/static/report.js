/* dabench report: charts, task rows, episode panels and permalinks. No network access. */
(function () {
  "use strict";
  var charts = JSON.parse(document.getElementById("dabench-charts").textContent);
  var episodes = JSON.parse(document.getElementById("dabench-episodes").textContent);
  /* Each arm's colour comes from its name (computed by the report), so it is the same in
     every report. */
  var colors = charts.colors;
  document.querySelectorAll(".dot[data-arm]").forEach(function (d) {
    d.style.background = colors[d.getAttribute("data-arm")] || "#64748b";
  });

  function alpha(hex, a) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + a + ")";
  }
  function pct(v) { return v === null || v === undefined ? "—" : (100 * v).toFixed(1) + "%"; }

  /* ---------- charts ---------- */
  window.dabenchCharts = [];
  if (window.Chart) {
    Chart.defaults.font.family = getComputedStyle(document.documentElement).fontFamily;
    Chart.defaults.color = "#6b7487";
    Chart.defaults.animation = false;
    Chart.defaults.maintainAspectRatio = false;
    Chart.defaults.plugins.legend.labels.boxWidth = 12;
  }
  var whiskers = {
    id: "dabenchWhiskers",
    afterDatasetsDraw: function (chart) {
      var ctx = chart.ctx;
      chart.data.datasets.forEach(function (ds, di) {
        if (!ds.ci) { return; }
        var meta = chart.getDatasetMeta(di);
        if (meta.hidden) { return; }
        var horizontal = chart.options.indexAxis === "y";
        var scale = horizontal ? chart.scales.x : chart.scales.y;
        ctx.save();
        ctx.strokeStyle = "#1d2433";
        ctx.lineWidth = 1.5;
        meta.data.forEach(function (bar, i) {
          var ci = ds.ci[i];
          if (!ci || ci[0] === null || ci[1] === null) { return; }
          var lo = scale.getPixelForValue(100 * ci[0]);
          var hi = scale.getPixelForValue(100 * ci[1]);
          var c = horizontal ? bar.y : bar.x;
          ctx.beginPath();
          if (horizontal) {
            ctx.moveTo(lo, c); ctx.lineTo(hi, c);
            ctx.moveTo(lo, c - 5); ctx.lineTo(lo, c + 5);
            ctx.moveTo(hi, c - 5); ctx.lineTo(hi, c + 5);
          } else {
            ctx.moveTo(c, lo); ctx.lineTo(c, hi);
            ctx.moveTo(c - 5, lo); ctx.lineTo(c + 5, lo);
            ctx.moveTo(c - 5, hi); ctx.lineTo(c + 5, hi);
          }
          ctx.stroke();
        });
        ctx.restore();
      });
    }
  };
  function make(id, config) {
    var canvas = document.getElementById(id);
    if (!canvas || !window.Chart) { return; }
    config.plugins = (config.plugins || []).concat([whiskers]);
    window.dabenchCharts.push(new Chart(canvas, config));
  }
  /* A chart with no data: its canvas box (fixed height) becomes a one-line note. */
  function emptyNote(id, text) {
    var canvas = document.getElementById(id);
    if (!canvas) { return; }
    var box = canvas.parentNode;
    var p = document.createElement("p");
    p.className = "muted empty-note";
    p.id = id + "-note";
    p.textContent = text;
    box.parentNode.replaceChild(p, box);
  }
  /* Points at the edge of a chart (100 %, 0 s) are drawn whole: no clipping to the chart
     area, and room around it for the largest point. */
  function unclipped(datasets, pad) {
    datasets.forEach(function (ds) { ds.clip = false; });
    return { padding: { top: pad, right: pad, bottom: 0, left: 0 } };
  }
  var pctAxis = { min: 0, max: 100, ticks: { callback: function (v) { return v + "%"; } } };

  var arms = charts.arms.filter(function (a) { return charts.overall[a]; });
  make("chart-overall", {
    type: "bar",
    data: {
      labels: arms,
      datasets: [{
        label: "accuracy",
        data: arms.map(function (a) { var v = charts.overall[a].accuracy.est; return v === null ? null : 100 * v; }),
        ci: arms.map(function (a) { var x = charts.overall[a].accuracy; return [x.low, x.high]; }),
        backgroundColor: arms.map(function (a) { return alpha(colors[a], 0.75); }),
        borderRadius: 6
      }, {
        label: "pass^" + charts.k,
        data: arms.map(function (a) { var v = charts.overall[a].pass_hat_k.est; return v === null ? null : 100 * v; }),
        ci: arms.map(function (a) { var x = charts.overall[a].pass_hat_k; return [x.low, x.high]; }),
        backgroundColor: arms.map(function (a) { return alpha(colors[a], 0.35); }),
        borderRadius: 6
      }]
    },
    options: { indexAxis: "y", scales: { x: pctAxis }, plugins: { legend: { display: true } } }
  });

  /* A metric an arm lacks is a gap in its outline (null), never a point at 0. Each arm has its
     own marker shape, line pattern and marker size, so arms with identical
     values stay distinguishable where they lie on top of each other. */
  var POINT_STYLES = ["circle", "rect", "triangle", "rectRot", "star", "crossRot", "cross", "rectRounded"];
  var DASHES = [[], [8, 4], [2, 3], [12, 3, 2, 3], [4, 4], [1, 5]];
  var radarArms = Object.keys(charts.radar.values);
  /* Within a group of identical arms, the i-th arm's markers and line are larger / wider. */
  var twinIndex = {};
  (charts.radar.identical || []).forEach(function (g) { g.forEach(function (a, i) { twinIndex[a] = i; }); });
  make("chart-radar", {
    type: "radar",
    data: {
      labels: charts.radar.labels,
      datasets: radarArms.map(function (a, i) {
        return {
          label: a,
          data: charts.radar.values[a].map(function (v) { return v === null ? null : 100 * v; }),
          borderColor: colors[a], backgroundColor: alpha(colors[a], 0.12),
          pointBackgroundColor: alpha(colors[a], 0.35), pointBorderColor: colors[a],
          pointStyle: POINT_STYLES[i % POINT_STYLES.length],
          borderDash: DASHES[i % DASHES.length],
          /* Chart.js draws the first dataset on top: a later arm identical to an earlier
             one gets larger markers and a wider line, so it still shows around it. */
          pointRadius: 3.5 + 3 * (twinIndex[a] || 0),
          pointHoverRadius: 5.5 + 3 * (twinIndex[a] || 0),
          borderWidth: 2 + 2 * (twinIndex[a] || 0),
          spanGaps: false,
          /* a filled outline with a gap would be closed through the centre (read as 0) */
          fill: charts.radar.values[a].indexOf(null) < 0
        };
      })
    },
    options: {
      scales: { r: { min: 0, max: 100, ticks: { stepSize: 25, backdropColor: "transparent" } } },
      plugins: {
        legend: { labels: { usePointStyle: true, boxWidth: 10 } },
        tooltip: { callbacks: { label: function (c) {
          return c.dataset.label + ": " + (c.raw === null ? "n/a" : c.raw.toFixed(1) + "%");
        } } }
      }
    }
  });
  var radarGaps = Object.keys(charts.radar.values).map(function (a) {
    var missing = charts.radar.labels.filter(function (_, i) { return charts.radar.values[a][i] === null; });
    return missing.length ? a + ": " + missing.join(", ") : null;
  }).filter(Boolean);
  var radarBox = document.getElementById("chart-radar");
  if (radarBox && radarGaps.length) {
    var gapNote = document.createElement("p");
    gapNote.className = "muted small chart-note";
    gapNote.id = "chart-radar-na";
    gapNote.textContent = "n/a (not drawn): " + radarGaps.join("; ");
    radarBox.parentNode.parentNode.appendChild(gapNote);
  }
  if (radarBox && charts.radar.identical && charts.radar.identical.length) {
    var same = document.createElement("p");
    same.className = "muted small chart-note identical-note";
    same.id = "chart-radar-identical";
    same.textContent = "Identical on every axis (drawn on top of each other; told apart by marker and line): " +
      charts.radar.identical.map(function (g) { return g.join(" = "); }).join("; ");
    radarBox.parentNode.parentNode.appendChild(same);
  }

  ["suite", "difficulty", "category"].forEach(function (dim) {
    var b = charts.breakdowns[dim];
    if (!b || !b.labels.length) { emptyNote("chart-" + dim, "No data."); return; }
    make("chart-" + dim, {
      type: "bar",
      data: {
        labels: b.labels,
        datasets: arms.map(function (a) {
          return {
            label: a,
            data: b.series[a].map(function (x) { return x.est === null ? null : 100 * x.est; }),
            ci: b.series[a].map(function (x) { return [x.low, x.high]; }),
            backgroundColor: alpha(colors[a], 0.8), borderRadius: 4
          };
        })
      },
      options: { scales: { y: pctAxis } }
    });
  });

  var scatterArms = Object.keys(charts.scatter).filter(function (a) { return charts.scatter[a].length; });
  if (scatterArms.length) {
    var scatterSets = scatterArms.map(function (a) {
      return {
        label: a,
        data: charts.scatter[a].map(function (p) { return { x: p[0], y: 100 * p[1] }; }),
        backgroundColor: alpha(colors[a], 0.45), pointRadius: 3, pointHoverRadius: 5
      };
    });
    make("chart-scatter", {
      type: "scatter",
      data: { datasets: scatterSets },
      options: {
        layout: unclipped(scatterSets, 8),
        scales: { x: { min: 0, title: { display: true, text: "wall clock (s)" } }, y: pctAxis }
      }
    });
  } else { emptyNote("chart-scatter", "No completed graded episode: no latency to plot."); }

  /* Cost vs quality: mean cost per episode where any arm recorded one, else mean tokens;
     an arm with neither is listed under the chart, never drawn at 0. */
  var bubbleAll = Object.keys(charts.bubble);
  var useCost = bubbleAll.some(function (a) { return charts.bubble[a].cost !== null; });
  var xKey = useCost ? "cost" : "tokens";
  var bubbleArms = bubbleAll.filter(function (a) { return charts.bubble[a][xKey] !== null && charts.bubble[a].score !== null; });
  var bubbleMissing = bubbleAll.filter(function (a) { return bubbleArms.indexOf(a) < 0; });
  if (bubbleArms.length) {
    var maxEp = Math.max.apply(null, bubbleArms.map(function (a) { return charts.bubble[a].episodes; }).concat([1]));
    var maxX = Math.max.apply(null, bubbleArms.map(function (a) { return charts.bubble[a][xKey]; }));
    var bubbleSets = bubbleArms.map(function (a) {
      var p = charts.bubble[a];
      return {
        label: a,
        data: [{ x: p[xKey], y: 100 * p.score, r: 6 + 14 * Math.sqrt(p.episodes / maxEp) }],
        backgroundColor: alpha(colors[a], 0.5), borderColor: colors[a]
      };
    });
    make("chart-bubble", {
      type: "bubble",
      data: { datasets: bubbleSets },
      options: {
        layout: unclipped(bubbleSets, 22),
        scales: {
          x: { min: 0, suggestedMax: maxX > 0 ? maxX * 1.25 : 1, title: { display: true, text: useCost ? "mean cost per episode (USD)" : "mean tokens per episode (no cost recorded)" } },
          y: { min: 0, max: 100, title: { display: true, text: "mean overall score (%)" } }
        }
      }
    });
    if (bubbleMissing.length) {
      var bNote = document.createElement("p");
      bNote.className = "muted small chart-note";
      bNote.id = "chart-bubble-na";
      bNote.textContent = "Not drawn (no " + (useCost ? "cost" : "token count") + " recorded): " + bubbleMissing.join(", ");
      document.getElementById("chart-bubble").parentNode.parentNode.appendChild(bNote);
    }
  } else {
    emptyNote("chart-bubble", "No arm recorded a cost or a token count (agents that call no model): nothing to plot.");
  }

  if (charts.funnel) {
    var fArms = Object.keys(charts.funnel.series);
    make("chart-funnel", {
      type: "bar",
      data: {
        labels: charts.funnel.labels,
        datasets: fArms.map(function (a) {
          return { label: a, data: charts.funnel.series[a].map(function (v) { return v === null ? null : 100 * v; }), backgroundColor: alpha(colors[a], 0.8), borderRadius: 4 };
        })
      },
      options: { scales: { y: pctAxis } }
    });
  }

  /* ---------- scroll cues ---------- */
  /* A table wider than its card scrolls inside it; while it does, a line above it says so. */
  function markOverflow() {
    document.querySelectorAll(".scroll").forEach(function (box) {
      var over = box.scrollWidth > box.clientWidth + 1;
      box.classList.toggle("overflowing", over);
      var cue = box.previousElementSibling;
      if (!cue || !cue.classList.contains("scroll-cue")) {
        if (!over) { return; }
        cue = document.createElement("p");
        cue.className = "scroll-cue small";
        cue.textContent = "\u21c6 scroll sideways for more columns";
        box.parentNode.insertBefore(cue, box);
      }
      cue.hidden = !over;
    });
  }
  markOverflow();
  window.addEventListener("resize", markOverflow);

  /* ---------- tasks ---------- */
  function toggleTask(row, open) {
    var detail = row.nextElementSibling;
    if (!detail || !detail.classList.contains("task-detail")) { return; }
    var show = open === undefined ? detail.hidden : open;
    detail.hidden = !show;
    row.classList.toggle("open", show);
    markOverflow();
  }
  document.querySelectorAll(".task-row").forEach(function (row) {
    row.addEventListener("click", function (ev) {
      if (ev.target.closest("a")) { return; }
      toggleTask(row);
    });
  });
  var filter = document.getElementById("task-filter");
  if (filter) {
    filter.addEventListener("input", function () {
      var q = filter.value.trim().toLowerCase();
      document.querySelectorAll(".task-row").forEach(function (row) {
        var hit = !q || row.textContent.toLowerCase().indexOf(q) >= 0;
        row.hidden = !hit;
        if (!hit) { toggleTask(row, false); }
      });
    });
  }

  /* ---------- episode panel ---------- */
  function el(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") { node.textContent = attrs[k]; } else { node.setAttribute(k, attrs[k]); }
    });
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) { continue; }
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return node;
  }
  function section(title) { return el("h4", { text: title }); }
  function pre(text) { return el("pre", { text: text || "—" }); }
  function table(headers, rows) {
    var t = el("table", {});
    t.appendChild(el("tr", {}, ...headers.map(function (h) { return el("th", { text: h }); })));
    rows.forEach(function (r) {
      t.appendChild(el("tr", {}, ...r.map(function (c) {
        return c instanceof Node ? el("td", {}, c) : el("td", { text: c === null || c === undefined ? "—" : String(c) });
      })));
    });
    return t;
  }
  function verdict(ok) { return el("span", { class: ok ? "ok" : "ko", text: ok ? "✓" : "✕" }); }

  function renderEpisode(ep) {
    var panel = el("section", { class: "episode-panel", id: "ep-" + ep.key });
    var link = el("a", { href: "#ep-" + ep.key, text: "# permalink" });
    panel.appendChild(el("h3", {}, (ep.passed ? "✓ " : ep.excluded ? "⚙ " : "✕ ") + ep.task + " · " + ep.arm + " · attempt " + ep.attempt));
    var status = el("div", { class: "status" },
      el("span", { class: "badge " + (ep.passed ? "green" : ep.excluded ? "gray" : "red"), text: ep.failure.replace(/_/g, " ") }),
      el("span", { class: "badge gray", text: "status: " + ep.status }),
      el("span", { class: "badge gray", title: "the episode's overall score (a weighted mix of the scores below)", text: "overall score " + pct(ep.score) }),
      el("span", { class: "badge gray", text: ep.wall_s + " s · " + ep.tokens + " tokens" + (ep.cost === null ? "" : " · $" + ep.cost.toFixed(4)) }),
      ep.mismatch ? el("span", { class: "badge purple", text: "≠ tool mismatch" }) : null,
      link);
    panel.appendChild(status);
    if (ep.harness_error) { panel.appendChild(el("p", { class: "muted", text: "Harness error (excluded): " + ep.harness_error })); }
    panel.appendChild(section("Prompt" + (ep.prompts.length > 1 ? "s (" + ep.prompts.length + " turns)" : "")));
    ep.prompts.forEach(function (p) { panel.appendChild(pre(p)); });
    panel.appendChild(section("Ground truth"));
    panel.appendChild(pre(ep.truth));
    panel.appendChild(section("Answer"));
    panel.appendChild(pre(ep.answer));
    panel.appendChild(section("Grade"));
    panel.appendChild(el("p", {}, verdict(ep.passed), " " + ep.reason));
    if (ep.checks.length) {
      var checks = table(["check", "", "expected", "found", "reason"], ep.checks.map(function (c) {
        return [c.name, verdict(c.passed), c.expected, c.found, c.reason];
      }));
      checks.className = "episode-checks";
      panel.appendChild(checks);
    }
    if (ep.scores.length) {
      panel.appendChild(section("Scores (higher is better)"));
      var scores = table(["score", "value", "what it measures"], ep.scores.map(function (x) {
        var about = charts.score_names[x.name] || { label: x.name, help: "" };
        return [about.label, pct(x.value), about.help];
      }));
      scores.className = "episode-scores";
      panel.appendChild(scores);
    }
    if (ep.judge) {
      panel.appendChild(section("Judge"));
      panel.appendChild(pre(ep.judge.reasoning));
      if (ep.judge.claims.length) {
        var keys = [];
        ep.judge.claims.forEach(function (c) { Object.keys(c).forEach(function (k) { if (keys.indexOf(k) < 0) { keys.push(k); } }); });
        panel.appendChild(table(keys, ep.judge.claims.map(function (c) {
          return keys.map(function (k) { return typeof c[k] === "object" && c[k] !== null ? JSON.stringify(c[k]) : c[k]; });
        })));
      }
    }
    panel.appendChild(section("Tools"));
    panel.appendChild(el("p", {}, "expected: " + (ep.expected_tools.join(", ") || "—") + " · used: " + (ep.used_tools.join(", ") || "—") + (ep.mismatch ? "  ≠" : "")));
    if (ep.calls && ep.calls.length) {
      panel.appendChild(table(["#", "tool", "arguments", "error", "ms"], ep.calls.map(function (c, i) {
        return [i, c.name, JSON.stringify(c.args), c.error, c.ms];
      })));
    }
    if (ep.steps.length) {
      panel.appendChild(section("Protocol steps"));
      panel.appendChild(table(["step", "", "detail"], ep.steps.map(function (s) { return [s.name, verdict(!!s.passed), s.detail]; })));
    }
    var details = el("details", {}, el("summary", { text: "Transcript" + (ep.transcript ? " (" + ep.transcript.length + " messages)" : "") }));
    if (ep.transcript) {
      ep.transcript.forEach(function (m) {
        details.appendChild(el("div", { class: "msg " + m.role }, el("span", { class: "role", text: m.role }),
          el("div", { text: m.content || "" }), m.tool_calls ? el("code", { text: JSON.stringify(m.tool_calls) }) : null));
      });
    } else {
      details.appendChild(el("p", { class: "muted", text: "Transcript and tool-call arguments not embedded (report size limit); see episodes.jsonl." }));
    }
    panel.appendChild(details);
    return panel;
  }

  var drawer = document.getElementById("drawer");
  var body = document.getElementById("drawer-body");
  var scrim = document.getElementById("scrim");
  function closeDrawer() {
    drawer.classList.remove("open");
    scrim.classList.remove("open");
    drawer.setAttribute("aria-hidden", "true");
  }
  function openEpisode(key) {
    var ep = episodes[key];
    if (!ep) { return false; }
    body.textContent = "";
    body.appendChild(renderEpisode(ep));
    document.getElementById("drawer-title").textContent = "Episode " + key;
    drawer.classList.add("open");
    scrim.classList.add("open");
    drawer.setAttribute("aria-hidden", "false");
    var row = document.getElementById("task-" + ep.task);
    if (row) { toggleTask(row, true); }
    return true;
  }
  function route() {
    var hash = decodeURIComponent(location.hash.slice(1));
    if (hash.indexOf("ep-") === 0) {
      openEpisode(hash.slice(3));
    } else {
      closeDrawer();
      if (hash.indexOf("task-") === 0) {
        var row = document.getElementById(hash);
        if (row) { toggleTask(row, true); row.scrollIntoView({ block: "center" }); }
      }
    }
  }
  function dismiss() {
    closeDrawer();
    if (location.hash.indexOf("#ep-") === 0) { history.pushState(null, "", location.pathname + location.search); }
  }
  document.getElementById("drawer-close").addEventListener("click", dismiss);
  scrim.addEventListener("click", dismiss);
  document.addEventListener("keydown", function (ev) { if (ev.key === "Escape") { dismiss(); } });
  window.addEventListener("hashchange", route);
  route();
})();
