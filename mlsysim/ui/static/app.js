// mlsysim explorer: the page's logic. Plain JavaScript, no framework, no network but this server.
//
// State lives in the URL: ?scenario=NAME&FIELD=TEXT..., the same names and text forms as
// `mlsysim run --set FIELD=TEXT`. Every change re-evaluates through the JSON API.
"use strict";

const PAGE_PARAMS = ["deadline", "budget", "max_global_batch", "objective", "teach"];
const HEADLINE = [
  ["update_time", "Time per update"],
  ["efficiency", "Scaling efficiency"],
  ["speedup", "Speedup"],
  ["training_time", "Training time"],
  ["cost", "Cost"],
  ["global_batch", "Global batch"],
  ["bottleneck", "Bottleneck"],
  ["memory_per_device", "Memory per device"],
];
const COLORS = {
  compute: "#16a34a", intra: "#2563eb", inter: "#f97316", exposed: "#f97316",
  sync: "#a855f7", efficiency: "#2563eb", band: "rgba(37, 99, 235, 0.16)", speedup: "#0f766e", ideal: "#94a3b8",
  feasible: "#2563eb", infeasible: "#cbd5e1", pareto: "#f97316", now: "#dc2626",
};
const PLOT_CONFIG = { displaylogo: false, responsive: true, displayModeBar: false };

const state = {
  registry: null, fields: [], base: null, last: null, lastGood: null, seq: 0,
  planSeq: 0, timer: null, planTimer: null, revealed: false, explain: null,
};

const $ = (sel, root = document) => root.querySelector(sel);
const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "text") node.textContent = v;
    else if (k === "html") node.innerHTML = v;
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}
const escapeHtml = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
const label = (name) => name.replace(/^(assumptions|workload)\./, "").replace(/_/g, " ");
const CUSTOM_WORKLOAD = ["workload.parameters", "workload.name"];

// ---------------------------------------------------------------- formatting

function fmtNumber(x, digits = 4) {
  if (x === null || x === undefined) return "—";
  if (Number.isInteger(x) && Math.abs(x) < 1e7) return x.toLocaleString("en-US");
  const a = Math.abs(x);
  if (a !== 0 && (a >= 1e7 || a < 1e-3)) return x.toExponential(2);
  return Number(x.toPrecision(digits)).toLocaleString("en-US", { maximumFractionDigits: 6 });
}
// "1 node", "4 nodes", "1,024 devices": a count with its noun in the right number
function count(n, noun) {
  const x = Number(n);
  return `${fmtNumber(x)} ${noun}${x === 1 ? "" : "s"}`;
}
// A quantity as a field spells it ("32.0 USD/h"), its number as the page prints numbers ("32 USD/h")
function fmtQuantityText(text) {
  const m = /^\s*([-+]?[0-9.]+(?:[eE][-+]?\d+)?)\s*(.*)$/.exec(String(text));
  return m && Number.isFinite(Number(m[1])) ? `${fmtNumber(Number(m[1]))} ${m[2]}`.trim() : String(text);
}
function fmtTimeMs(ms) {
  if (ms >= 3.6e6) return `${fmtNumber(ms / 3.6e6)} h`;
  if (ms >= 1000) return `${fmtNumber(ms / 1000)} s`;
  if (ms >= 1) return `${fmtNumber(ms)} ms`;
  return `${fmtNumber(ms * 1000)} µs`;
}
function fmtBytes(b) {
  const units = [["TB", 1e12], ["GB", 1e9], ["MB", 1e6], ["kB", 1e3]];
  for (const [u, f] of units) if (Math.abs(b) >= f) return `${fmtNumber(b / f)} ${u}`;
  return `${fmtNumber(b)} B`;
}
function fmtHours(h) {
  if (h >= 48) return `${fmtNumber(h / 24, 3)} days`;
  if (h >= 1) return `${fmtNumber(h, 4)} h`;
  return `${fmtNumber(h * 60, 3)} min`;
}
const SHORT_UNITS = { second: "s", minute: "min", megawatt_hour: "MWh", kilowatt_hour: "kWh", metric_ton: "t", watt: "W" };
// A result field as [data-value, data-unit, shown text]
function figure(name, v) {
  if (v === null || v === undefined) return ["", "", name === "cost" ? "no price given" : "—"];
  if (typeof v === "object" && "unit" in v) {
    const x = v.value;
    const text = v.unit === "millisecond" ? fmtTimeMs(x) : v.unit === "byte" ? fmtBytes(x)
      : v.unit === "hour" ? fmtHours(x) : v.unit === "USD" ? `$${x.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`
      : `${fmtNumber(x)} ${SHORT_UNITS[v.unit] || v.unit}`;
    return [String(x), v.unit, text];
  }
  if (typeof v === "boolean") return [String(v), "", v ? "yes" : "no"];
  if (typeof v === "number") {
    if (name === "efficiency" || name.endsWith("_share")) return [String(v), "", `${(v * 100).toFixed(1)} %`];
    if (name === "speedup") return [String(v), "", `${fmtNumber(v, 4)}×`];
    return [String(v), "", fmtNumber(v)];
  }
  if (Array.isArray(v)) return [v.join("; "), "", v.join("; ")];
  return [String(v), "", String(v)];
}

// A prediction interval: {low, high (numbers in the figure's data-unit, as text), label: "80% interval: ", text: "21.4–33.0 %"}.
function intervalText(name, v, band, level) {
  const part = (x) => figure(name, x);
  const [low, , lowText] = part(band.low), [high, , highText] = part(band.high);
  const pct = `${Math.round(level * 100)}%`;
  let text;
  if (name === "efficiency") text = `${(band.low * 100).toFixed(1)}–${(band.high * 100).toFixed(1)} %`;
  else if (name === "speedup") text = `${fmtNumber(band.low, 3)}–${fmtNumber(band.high, 3)}×`;
  else {
    const unit = (t) => t.replace(/^\$?[\d.,]+\s*/, "");  // "1.855 h" -> "h"; "$237.49" -> ""
    const same = unit(lowText) === unit(highText);
    text = same && unit(lowText) ? `${lowText.slice(0, -unit(lowText).length).trim()}–${highText}` : `${lowText}–${highText}`;
  }
  return { low, high, label: `${pct} interval: `, text };
}

// ---------------------------------------------------------------- the form

function buildForm() {
  const form = $("#form");
  const groups = new Map();
  for (const f of state.fields) {
    if (!groups.has(f.group)) groups.set(f.group, []);
    groups.get(f.group).push(f);
  }
  const phone = window.matchMedia("(max-width: 760px)").matches;
  const closed = new Set(phone ? ["Workload", "Execution layout", "Model assumptions"] : ["Model assumptions"]);
  for (const [group, fields] of groups) {
    const box = el("details", { class: "group", open: !closed.has(group) }, el("summary", { text: group }));
    for (const f of fields) box.append(fieldRow(f));
    form.append(box);
  }
  form.before(nodePresetRow());  // outside the form: the form holds exactly the scenario's fields
  form.addEventListener("input", onInput);
  form.addEventListener("change", onInput);
}

// The field's name as --set spells it (spaces for underscores), its label and symbol from the field table.
function fieldLabel(f, id) {
  const hint = el("span", { class: "field-hint", text: f.label || "" });
  if (f.symbol) hint.append(" (", el("span", { class: "symbol", html: prettyEquation(f.symbol) }), ")");
  return el("label", { for: id, title: `${f.name}${f.label ? ": " + f.label : ""}` },
    el("span", { class: "field-name", text: label(f.name) }), f.label || f.symbol ? hint : null);
}

function fieldRow(f) {
  const id = `f-${f.name.replace(".", "-")}`;
  let input;
  if (f.kind === "choice") {
    input = el("select", { id, name: f.name });
    if (f.optional) input.append(el("option", { value: "", text: "(none)" }));
    for (const c of f.choices) input.append(el("option", { value: c, text: c }));
  } else {
    const list = f.suggestions.length ? `dl-${id}` : null;
    input = el("input", {
      id, name: f.name, type: "text", list, spellcheck: "false",
      inputmode: f.kind === "int" ? "numeric" : f.kind === "number" ? "decimal" : null,
      placeholder: f.required ? f.example : f.example ? `none (e.g. ${f.example})` : "none",
      "aria-describedby": `err-${id}`,
    });
    if (list) {
      const dl = el("datalist", { id: list });
      for (const s of f.suggestions) dl.append(el("option", { value: s }));
      input.after(dl);
      return el("div", { class: "field" }, fieldLabel(f, id), input, dl,
        el("div", { class: "error", id: `err-${id}`, "data-error-for": f.name }));
    }
  }
  return el("div", { class: "field" }, fieldLabel(f, id), input,
    el("div", { class: "error", id: `err-${id}`, "data-error-for": f.name }));
}

function nodePresetRow() {
  const select = el("select", { id: "node-preset", "aria-label": "Fill devices, NVLink and memory from a node of the registry" },
    el("option", { value: "", text: "Fill the cluster from a registry node…" }));
  for (const n of state.registry.nodes) select.append(el("option", { value: n.name, text: n.name }));
  select.addEventListener("change", (e) => {
    e.stopPropagation();
    const node = state.registry.nodes.find((n) => n.name === select.value);
    if (!node) return;
    for (const [k, v] of Object.entries(node.values)) setInput(k, v);
    select.value = "";
    schedule();
  });
  return el("div", { class: "preset" }, select);
}

function inputOf(name) { return $(`#form [name="${CSS.escape(name)}"]`); }
function setInput(name, text) { const i = inputOf(name); if (i) i.value = text ?? ""; }
function fillFrom(values) { for (const f of state.fields) setInput(f.name, values[f.name] ?? ""); }
function formValues() {
  const out = {};
  for (const f of state.fields) { const i = inputOf(f.name); if (i) out[f.name] = i.value.trim(); }
  return out;
}

// workload=custom: the parameter count (prefilled with the last model's) and name; hidden otherwise.
function syncWorkload(prefill = false) {
  const select = inputOf("workload");
  if (!select) return;
  const custom = select.value === "custom";
  if (prefill && custom && !inputOf("workload.parameters").value.trim()) {
    const model = state.registry.models.find((m) => m.name === state.lastGood?.values.workload);
    if (model) setInput("workload.parameters", `${model.parameters} param`);
  }
  if (prefill && !custom) for (const k of CUSTOM_WORKLOAD) setInput(k, "");
  for (const k of CUSTOM_WORKLOAD) { const i = inputOf(k); if (i) i.closest(".field").hidden = !custom; }
}

function onInput(e) {
  const name = e.target.name;
  if (!name) return;
  if (name === "workload") syncWorkload(true);
  if (name === "assumptions") {
    const preset = state.registry.presets[e.target.value];
    if (preset) for (const [k, v] of Object.entries(preset)) setInput(k, v);
  } else if (name.startsWith("assumptions.")) {
    syncPreset();
  }
  if (e.type === "input" || e.target.tagName === "SELECT") schedule();
}

function syncPreset() {
  const values = formValues();
  const select = inputOf("assumptions");
  if (!select) return;
  for (const [name, preset] of Object.entries(state.registry.presets)) {
    if (Object.entries(preset).every(([k, v]) => values[k] === v)) { select.value = name; return; }
  }
  select.value = "custom";
}

// ---------------------------------------------------------------- state <-> URL

function baseValues() {
  const name = $("#scenario").value;
  return (state.registry.scenarios.find((s) => s.name === name) || state.registry.scenarios[0]).values;
}

// The changes from the base scenario, as --set would spell them.
function changes() {
  const base = baseValues();
  const values = formValues();
  const out = [];
  const preset = values.assumptions;
  for (const f of state.fields) {
    const k = f.name;
    if (k.startsWith("assumptions.")) continue;
    if (k === "assumptions") {
      if (preset !== "custom" && preset !== base.assumptions) out.push([k, preset]);
      continue;
    }
    if (values[k] !== (base[k] ?? "")) out.push([k, values[k]]);
  }
  if (preset === "custom") {
    for (const f of state.fields) {
      const k = f.name;
      if (k.startsWith("assumptions.") && values[k] !== (base[k] ?? "")) out.push([k, values[k]]);
    }
  }
  return out;
}

function pageParams() {
  const out = [];
  for (const k of ["deadline", "budget", "max_global_batch", "objective"]) { const v = $(`#${k}`).value.trim(); if (v) out.push([k, v]); }
  if ($("#teach").checked) out.push(["teach", "1"]);
  return out;
}

function query(extra = [], withPage = true) {
  const params = new URLSearchParams();
  params.append("scenario", $("#scenario").value);
  for (const [k, v] of changes()) params.append(k, v);
  if (withPage) for (const [k, v] of pageParams()) params.append(k, v);
  for (const [k, v] of extra) params.append(k, v);
  return params.toString().replace(/\+/g, "%20");
}

function loadFromUrl() {
  const params = new URLSearchParams(location.search);
  const names = state.registry.scenarios.map((s) => s.name);
  const wanted = params.get("scenario");
  const match = names.find((n) => wanted && n.toLowerCase() === wanted.toLowerCase());
  $("#scenario").value = match || names[0];
  fillFrom(baseValues());
  const preset = params.get("assumptions");
  if (preset && state.registry.presets[preset]) for (const [k, v] of Object.entries(state.registry.presets[preset])) setInput(k, v);
  let unknown = [];
  for (const [k, v] of params) {
    if (k === "scenario") continue;
    if (PAGE_PARAMS.includes(k)) {
      if (k === "teach") $("#teach").checked = v !== "0" && v !== "";
      else $(`#${k}`).value = v;
      continue;
    }
    if (inputOf(k)) {
      const input = inputOf(k);
      if (input.tagName === "SELECT" && ![...input.options].some((o) => o.value === v)) input.append(el("option", { value: v, text: v }));
      input.value = v;
    } else unknown.push([k, v]);
  }
  state.unknown = unknown;  // sent as given: the server names them
  if (CUSTOM_WORKLOAD.some((k) => params.has(k)) && !params.has("workload")) inputOf("workload").value = "custom";
  syncWorkload();
  syncPreset();
  if (preset === "custom" || [...params.keys()].some((k) => k.startsWith("assumptions."))) {
    if (!state.registry.presets[inputOf("assumptions").value]) inputOf("assumptions").value = "custom";
  }
  describeScenario();
}

function describeScenario() {
  const s = state.registry.scenarios.find((x) => x.name === $("#scenario").value);
  $("#scenario-description").textContent = s ? s.description : "";
}

// ---------------------------------------------------------------- talking to the server

// Requests in flight are counted on <body data-busy>: "false" once the page has settled.
let inFlight = 0;
function busy(delta) {
  inFlight += delta;
  document.body.dataset.busy = String(inFlight > 0 || state.timer !== null || state.planTimer !== null);
}

async function api(path, q) {
  busy(+1);
  try {
    const response = await fetch(`${path}?${q}`, { headers: { Accept: "application/json" } });
    const body = await response.json();
    return { ok: response.ok, status: response.status, body };
  } finally { busy(-1); }
}

function schedule() {
  clearTimeout(state.timer);
  state.timer = setTimeout(() => { state.timer = null; update(); }, 150);
  busy(0);
}

async function update() {
  busy(+1);
  try { await refresh(); } finally { busy(-1); }
}

async function refresh() {
  const extra = state.unknown || [];
  const q = query(extra);
  history.replaceState(null, "", `?${q}`);
  const scenarioQ = query(extra, false);
  $("#download-toml").href = `/api/scenario.toml?${scenarioQ}`;
  $("#download-csv").href = `/api/sweep?${scenarioQ}&format=csv`;
  if (scenarioQ === state.lastQuery) { updatePlan(); return; }
  state.lastQuery = scenarioQ;
  const seq = ++state.seq;
  document.body.classList.add("busy");
  let answer;
  try { answer = await api("/api/evaluate", scenarioQ); } catch (err) { setStatus(`The server did not answer (${err}).`, "bad"); return; }
  if (seq !== state.seq) return;
  document.body.classList.remove("busy");
  showErrors(answer.ok ? {} : answer.body.errors || {});
  if (!answer.ok) {
    setStatus(state.lastGood ? "Fix the marked field: the figures below are still those of the last valid inputs." : answer.body.error, "bad");
    document.body.classList.add("stale");
    return;
  }
  document.body.classList.remove("stale");
  setStatus("", "");
  state.lastGood = answer.body;
  if ($("#teach").checked) hideForGuess();
  renderResults(answer.body);
  const [sweep, explain, timeline] = await Promise.all(
    [api("/api/sweep", scenarioQ), api("/api/explain", scenarioQ), api("/api/timeline", scenarioQ)]);
  if (seq !== state.seq) return;
  if (sweep.ok) { renderScaling(sweep.body, answer.body); renderBreakdown(sweep.body, answer.body); }
  if (explain.ok) renderExplain(explain.body);
  if (timeline.ok) renderTimeline(timeline.body);
  await updatePlan();
}

async function updatePlan() {
  if (!state.lastGood) return;
  const seq = ++state.planSeq;
  const answer = await api("/api/plan", query(state.unknown || []));
  if (seq !== state.planSeq) return;
  for (const k of ["deadline", "budget", "max_global_batch", "objective"]) {
    const box = $(`[data-error-for="${k}"]`);
    if (box) box.textContent = answer.ok ? "" : (answer.body.errors || {})[k] || "";
  }
  $("#plan-notes").textContent = answer.ok ? (answer.body.notes || []).join(" · ") : "";
  if (answer.ok) renderPlan(answer.body, state.lastGood);
  else $("#plan-summary").textContent = answer.body.error;
}

function setStatus(text, kind) {
  const s = $("#status");
  s.textContent = text;
  s.className = kind || "";
}

function showErrors(errors) {
  for (const box of $$("#form [data-error-for]")) {
    const message = errors[box.dataset.errorFor] || "";
    box.textContent = message;
    const input = inputOf(box.dataset.errorFor);
    if (input) input.setAttribute("aria-invalid", message ? "true" : "false");
    if (message) box.closest("details")?.setAttribute("open", "");
  }
  const other = Object.entries(errors).filter(([k]) => !inputOf(k));
  if (other.length) setStatus(other.map(([, m]) => m).join(" "), "bad");
}

// ---------------------------------------------------------------- results

function renderResults(data) {
  const r = data.result;
  const head = $("#headline");
  head.replaceChildren();
  for (const [name, title] of HEADLINE) {
    const [value, unit, text] = figure(name, r[name]);
    let sub = "";
    if (name === "efficiency") sub = count(r.n_devices, "device");
    if (name === "update_time") sub = `${fmtTimeMs(r.compute_time.value)} compute + ${fmtTimeMs(r.update_time.value - r.compute_time.value)} waiting`;
    if (name === "memory_per_device") sub = r.fits === null ? "device memory not given" : r.fits ? `fits in ${figure("device_memory", r.device_memory)[2]}` : `does NOT fit in ${figure("device_memory", r.device_memory)[2]}`;
    if (name === "cost" && r.cost) sub = `${count(inputOf("nodes").value, "node")} at ${fmtQuantityText(inputOf("node_hour_rate").value)}`;
    const band = data.intervals && data.intervals.fields[name];
    const range = band ? intervalText(name, r[name], band, data.intervals.level) : null;
    const card = el("div", { class: `figure-card ${name === "memory_per_device" && r.fits === false ? "warn" : ""}` },
      el("div", { class: "figure-title", text: title }),
      el("div", { class: "figure-value", "data-field": name, "data-value": value, "data-unit": unit, text,
        "data-low": range && range.low, "data-high": range && range.high, "data-level": range && String(data.intervals.level) }),
      range ? el("div", { class: "figure-interval", title: "prediction interval: from the model's errors on the published measurements (docs/model.md)" },
        range.label, el("span", { class: "nowrap", text: range.text })) : null,
      el("div", { class: "figure-sub", text: sub }));
    head.append(card);
  }
  if (r.data_parallel !== null && r.data_parallel !== undefined) head.append(layoutCard(r));
  if (r.energy || r.goodput !== null && r.goodput !== undefined) head.append(wholeRunCard(r));
  const table = $("#all-figures");
  table.replaceChildren(el("tr", {}, el("th", { text: "figure" }), el("th", { text: "value" }), el("th", { text: "in unit" })));
  const shown = new Set(HEADLINE.map(([n]) => n));
  for (const [name, v] of Object.entries(r)) {
    if (shown.has(name) || name === "constraint_trace") continue;
    const [value, unit, text] = figure(name, v);
    table.append(el("tr", {}, el("td", { text: label(name), title: name }),
      el("td", { "data-field": name, "data-value": value, "data-unit": unit, text }),
      el("td", { class: "muted exact", text: `${value} ${unit}`.trim() })));
  }
  $("#notes").textContent = (data.notes || []).join(" · ");
}

// A parallel layout (docs/parallelism.md): t, cp, p, d, ep, etp and the sharding, then each term of the update.
function layoutCard(r) {
  const zero = Number(inputOf("zero_stage").value || 0);
  const v = Number(inputOf("pipeline_chunks").value || 1);
  const shard = inputOf("shard_group").value;
  const cp = Number((inputOf("context_parallel") || {}).value || 1);
  const ep = Number((inputOf("expert_parallel") || {}).value || 1);
  const etp = Number((inputOf("expert_tensor_parallel") || {}).value || 1);
  const parts = [`t=${r.tensor_ranks}`, ...(cp > 1 ? [`cp=${cp}`] : []), `p=${r.pipeline_stages}${v > 1 ? ` (v=${v})` : ""}`,
    `d=${r.data_parallel}`, ...(ep > 1 ? [`ep=${ep}`] : []), ...(etp > 1 ? [`etp=${etp}`] : []),
    zero ? `ZeRO-${zero}${shard ? ` (HSDP, groups of ${shard})` : ""}` : "no sharding"];
  const terms = [["compute", r.compute_time], ["tensor", r.tensor_parallel_time],
    ["context ring", r.context_parallel_time], ["expert all-to-alls", r.expert_parallel_time], ["bubble", r.bubble_time],
    ["stage transfers", r.pipeline_transfer_time], ["ZeRO-3 gathers", r.sharding_time],
    ["data sync", r.data_parallel_time], ["optimizer", r.optimizer_time], ["sync", r.synchronization_time]];
  const sum = terms.filter(([, q]) => q && q.value > 0).map(([n, q]) => `${n} ${fmtTimeMs(q.value)}`).join(" + ");
  return el("div", { class: "figure-card", id: "layout-card" },
    el("div", { class: "figure-title", text: "Parallel layout" }),
    el("div", { class: "figure-value", "data-layout": parts.join(" "), text: parts.join(" ") }),
    el("div", { class: "figure-sub", "data-breakdown": sum,
      text: `${sum}; bubble ${(100 * r.bubble_fraction).toFixed(1)}%` }));
}

// The whole run (docs/whole_run.md): failures, checkpoints and goodput; energy, emissions and their cost.
function wholeRunCard(r) {
  const text = (name) => figure(name, r[name])[2];
  const failures = r.goodput !== null && r.goodput !== undefined
    ? [`goodput ${(100 * r.goodput).toFixed(1)}%`, `wall clock ${text("wall_clock_time")}`,
       `MTBF ${text("job_mtbf")}`, `checkpoint every ${text("checkpoint_interval")} (${text("checkpoint_time")} each)`]
    : [];
  const energy = r.energy
    ? [`energy ${text("energy")}`, r.emissions ? `emissions ${text("emissions")} CO2e` : null,
       r.energy_cost ? `energy cost ${text("energy_cost")}` : null].filter(Boolean)
    : [];
  const headline = failures.length ? failures[0] : energy[0];
  return el("div", { class: "figure-card", id: "whole-run-card" },
    el("div", { class: "figure-title", text: "Whole run" }),
    el("div", { class: "figure-value", "data-whole-run": headline, text: headline }),
    el("div", { class: "figure-sub", "data-whole-run-detail": [...failures.slice(1), ...energy].join(" · "),
      text: [...failures.slice(1), ...(failures.length ? energy : energy.slice(1))].join(" · ") }));
}

function chartButtons() {
  for (const holder of $$(".chart-buttons")) {
    const name = holder.dataset.for;
    for (const format of ["png", "svg"]) {
      const b = el("button", { type: "button", class: "small-button", text: format.toUpperCase(), title: `Download this chart as ${format.toUpperCase()}` });
      b.addEventListener("click", () => Plotly.downloadImage($(`[data-plot="${name}"]`), { format, filename: `mlsysim-${name}`, width: 1000, height: 600 }));
      holder.append(b);
    }
  }
}

const LAYOUT = {
  margin: { l: 56, r: 56, t: 40, b: 48 }, font: { family: "system-ui, -apple-system, Segoe UI, sans-serif", size: 12, color: "#1e293b" },
  paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", hovermode: "x unified",
  legend: { orientation: "h", y: 1.02, yanchor: "bottom", x: 0, font: { size: 11 }, traceorder: "normal" },
};

// The sweep's axis (nodes; devices_per_node when there is no inter-node link) and its current value.
function sweepAxis(sweep) {
  const axis = sweep.axes[0];
  return { name: axis.field, column: axis.column, values: sweep.columns[axis.column].values,
    now: Number(inputOf(axis.field).value) || 1, title: label(axis.field) };
}
function powerTicks(values) {
  const top = Math.max(...values), ticks = [];
  for (let t = 1; t <= top; t *= 2) ticks.push(t);
  return ticks;
}

function renderScaling(sweep, current) {
  const c = sweep.columns;
  const axis = sweepAxis(sweep);
  const nodes = axis.values;
  const now = current.result;
  const nowNodes = axis.now;
  const band = sweep.interval ? [
    { x: nodes, y: sweep.interval.efficiency_low, name: "efficiency_low", showlegend: false, line: { width: 0 }, hoverinfo: "skip" },
    { x: nodes, y: sweep.interval.efficiency_high, name: `${Math.round(sweep.interval.level * 100)}% interval`, fill: "tonexty", fillcolor: COLORS.band, line: { width: 0 }, hoverinfo: "skip" },
  ] : [];
  const traces = [
    ...band,
    { x: nodes, y: c.efficiency.values, name: "efficiency", line: { color: COLORS.efficiency, width: 3 }, hovertemplate: "%{y:.1%}" },
    { x: nodes, y: c.speedup.values, name: "speedup", yaxis: "y2", line: { color: COLORS.speedup, width: 2 }, hovertemplate: "%{y:.3g}×" },
    { x: nodes, y: c.n_devices.values, name: "ideal speedup", yaxis: "y2", line: { color: COLORS.ideal, dash: "dot", width: 1.5 }, hovertemplate: "%{y}" },
    { x: [nowNodes], y: [now.efficiency], name: "this layout", mode: "markers", marker: { color: COLORS.now, size: 13, symbol: "diamond", line: { color: "white", width: 2 } }, hovertemplate: "this layout: %{y:.1%}" },
    { x: [nowNodes], y: [now.speedup], name: "this layout (speedup)", yaxis: "y2", mode: "markers", showlegend: false, marker: { color: COLORS.now, size: 11, symbol: "circle", line: { color: "white", width: 2 } }, hovertemplate: "this layout: %{y:.3g}×" },
    ...wholeRunTraces(c, nodes),
  ];
  const layout = {
    ...LAYOUT,
    xaxis: { title: { text: axis.title }, type: "log", tickvals: powerTicks(nodes), ticktext: powerTicks(nodes).map(String), gridcolor: "#e2e8f0" },
    yaxis: { title: { text: "efficiency" }, tickformat: ".0%", range: [0, 1.05], gridcolor: "#e2e8f0", color: COLORS.efficiency },
    yaxis2: { title: { text: "speedup" }, overlaying: "y", side: "right", rangemode: "tozero", showgrid: false, color: COLORS.speedup },
    shapes: [{ type: "line", x0: nowNodes, x1: nowNodes, y0: 0, y1: 1, yref: "paper", line: { color: COLORS.now, dash: "dash", width: 1 } }],
  };
  Plotly.react($('[data-plot="scaling"]'), traces, layout, PLOT_CONFIG);
}

// The whole run as the job grows (docs/whole_run.md): goodput falls as the job's mean time between
// failures does; efficiency x goodput is the share of the devices' wall-clock time that trains.
function wholeRunTraces(c, nodes) {
  if (!c.goodput || !c.goodput.values.some((v) => v !== null)) return [];
  return [
    { x: nodes, y: c.goodput.values, name: "goodput (whole run)", line: { color: COLORS.sync, dash: "dash", width: 2 }, hovertemplate: "goodput %{y:.1%}" },
    { x: nodes, y: c.goodput.values.map((g, i) => (g === null ? null : g * c.efficiency.values[i])), name: "efficiency × goodput",
      line: { color: COLORS.sync, width: 2 }, hovertemplate: "efficiency × goodput %{y:.1%}" },
  ];
}

function renderBreakdown(sweep, current) {
  const c = sweep.columns;
  const axis = sweepAxis(sweep);
  const nowNodes = axis.now;
  const picks = [];
  for (let i = 0; i < axis.values.length; i++) {
    const n = axis.values[i];
    if ((n & (n - 1)) === 0 || n === nowNodes) picks.push(i);
  }
  const x = picks.map((i) => (axis.values[i] === nowNodes ? `${axis.values[i]} (this)` : String(axis.values[i])));
  const col = (name) => picks.map((i) => c[name].values[i] / 1000);
  const overlap = picks.some((i) => c.hidden_communication_time.values[i] > 0);
  const parts = overlap
    ? [["compute_time", "compute", COLORS.compute], ["exposed_communication_time", "AllReduce not hidden", COLORS.exposed], ["synchronization_time", "synchronisation", COLORS.sync]]
    : [["compute_time", "compute", COLORS.compute], ["intra_time", "AllReduce in node", COLORS.intra], ["inter_time", "AllReduce across nodes", COLORS.inter], ["synchronization_time", "synchronisation", COLORS.sync]];
  const traces = parts.filter(([name]) => name === "compute_time" || picks.some((i) => c[name].values[i] > 0))
    .map(([name, title, color]) => ({ type: "bar", x, y: col(name), name: title, marker: { color }, hovertemplate: `${title}: %{y:.3g} s<extra></extra>` }));
  const layout = {
    ...LAYOUT, barmode: "stack", hovermode: "closest",
    xaxis: { title: { text: axis.title }, type: "category", tickangle: window.innerWidth < 760 ? -45 : 0 },
    yaxis: { title: { text: "seconds per update" }, gridcolor: "#e2e8f0", rangemode: "tozero" },
  };
  Plotly.react($('[data-plot="breakdown"]'), traces, layout, PLOT_CONFIG);
}

// One update as a bar per pipeline stage (/api/timeline): a trace per kind of work, each segment a
// bar from its start; forwards in a lighter green than backwards. The colours are the CLI plot's.
const KIND_COLORS = {
  compute: "#4c9a2a", matmul: "#166534", attention: "#65a30d", cast: "#a3e635", elementwise: "#86efac", tensor: "#2563eb", context: "#4f46e5", experts: "#9333ea", pipeline: "#0891b2", sharding: "#d97706", data: "#c0392b",
  overhead: "#a16207", optimizer: "#db2777", synchronization: "#7d3c98", idle: "#e5e7eb",
};
const FORWARD_COLOR = "#9fd18b";

function renderTimeline(line) {
  const ms = line.update_time < 2;
  const scale = ms ? 1000 : 1, unit = ms ? "ms" : "s";
  const rows = [...line.rows].reverse();  // the first stage on top
  const traces = [];
  for (const [kind, words] of Object.entries(line.kinds)) {
    const x = [], base = [], y = [], text = [], color = [];
    for (const row of rows) {
      const s = row.segments;
      for (let i = 0; i < s.kind.length; i++) {
        if (s.kind[i] !== kind) continue;
        x.push(s.duration[i] * scale); base.push(s.start[i] * scale); y.push(row.label); text.push(s.label[i]);
        color.push(s.label[i].startsWith("forward") ? FORWARD_COLOR : KIND_COLORS[kind]);
      }
    }
    if (!x.length) continue;
    traces.push({ type: "bar", orientation: "h", x, base, y, text, name: words, marker: { color }, textposition: "none",
      hovertemplate: `%{text}<br>%{x:.4g} ${unit} from %{base:.4g} ${unit}<extra>${words}</extra>` });
  }
  const hx = [], hbase = [], hy = [], htext = [];
  for (const row of rows) {
    const h = row.hidden;
    for (let i = 0; i < h.kind.length; i++) { hx.push(h.duration[i] * scale); hbase.push(h.start[i] * scale); hy.push(row.label); htext.push(h.label[i]); }
  }
  if (hx.length) {
    traces.push({ type: "bar", orientation: "h", x: hx, base: hbase, y: hy, text: htext, name: "hidden under the backward (not added)",
      width: 0.3, textposition: "none", marker: { color: "rgba(0,0,0,0)", line: { color: KIND_COLORS.data, width: 1.5 }, pattern: { shape: "/", fgcolor: KIND_COLORS.data } },
      hovertemplate: `%{text}<br>%{x:.4g} ${unit}<extra></extra>` });
  }
  const shown = rows.length < line.stages ? ` (${rows.length} of ${line.stages} stages shown)` : "";
  const layout = {
    ...LAYOUT, barmode: "overlay", hovermode: "closest", bargap: 0.25,
    xaxis: { title: { text: `time in the update, ${unit}${shown}` }, range: [0, line.update_time * scale], gridcolor: "#e2e8f0" },
    yaxis: { type: "category", categoryorder: "array", categoryarray: rows.map((r) => r.label), automargin: true },
  };
  const holder = $('[data-plot="timeline"]');
  holder.style.height = `${Math.min(180 + 34 * rows.length, 720)}px`;
  Plotly.react(holder, traces, layout, PLOT_CONFIG);
}

function renderPlan(plan, current) {
  const c = plan.columns;
  // the figures the plan ranked by: the wall clock and the whole run's cost where modeled
  const t = plan.ranked ? plan.ranked.time : c.training_time.values;
  const cost = plan.ranked ? plan.ranked.cost : c.cost.values;
  const timeLabel = plan.time_label || "training time", costLabel = plan.cost_label || "cost";
  const el_ = $('[data-plot="plan"]');
  if (cost.every((v) => v === null)) {
    Plotly.react(el_, [{ x: t, y: c.n_devices.values, mode: "markers", text: plan.labels, name: "layouts", marker: { color: COLORS.feasible }, hovertemplate: "%{text}<br>%{x:.3g} h<extra></extra>" }],
      { ...LAYOUT, hovermode: "closest", xaxis: { title: { text: `${timeLabel} (h)` }, type: "log" }, yaxis: { title: { text: "devices" } } }, PLOT_CONFIG);
    $("#plan-summary").textContent = "No node_hour_rate: give a price per node-hour to see cost. " + (plan.summary || "");
    return;
  }
  const idx = [...t.keys()];
  const ok = idx.filter((i) => plan.feasible[i]), bad = idx.filter((i) => !plan.feasible[i]);
  const pick = (arr, rows) => rows.map((i) => arr[i]);
  const traces = [
    { x: pick(t, bad), y: pick(cost, bad), text: pick(plan.labels, bad), mode: "markers", name: "outside the limits", marker: { color: COLORS.infeasible, size: 6 }, hovertemplate: "%{text}<br>%{x:.3g} h, $%{y:,.2f}<extra></extra>" },
    { x: pick(t, ok), y: pick(cost, ok), text: pick(plan.labels, ok), mode: "markers", name: "feasible layouts", marker: { color: COLORS.feasible, size: 6, opacity: 0.6 }, hovertemplate: "%{text}<br>%{x:.3g} h, $%{y:,.2f}<extra></extra>" },
    { x: pick(t, plan.pareto), y: pick(cost, plan.pareto), text: pick(plan.labels, plan.pareto), mode: "lines+markers", name: "Pareto front", line: { color: COLORS.pareto, width: 2, shape: "hv" }, marker: { size: 7 }, hovertemplate: "%{text}<br>%{x:.3g} h, $%{y:,.2f}<extra></extra>" },
  ];
  if (plan.best !== null) traces.push({ x: [t[plan.best]], y: [cost[plan.best]], text: [plan.labels[plan.best]], mode: "markers", name: `best (${plan.objective})`, marker: { color: "#1e293b", size: 15, symbol: "star" }, hovertemplate: "best: %{text}<br>%{x:.3g} h, $%{y:,.2f}<extra></extra>" });
  const r = current.result;
  const whole = (name, plain) => (r[name] && (name === plan.time_figure || name === plan.cost_figure) ? r[name] : r[plain]);
  if (r.cost) traces.push({ x: [whole("wall_clock_time", "training_time").value], y: [whole("total_cost", "cost").value], mode: "markers", name: "this layout", marker: { color: COLORS.now, size: 13, symbol: "diamond", line: { color: "white", width: 2 } }, hovertemplate: "this layout<br>%{x:.3g} h, $%{y:,.2f}<extra></extra>" });
  const shapes = [];
  const deadline = hours($("#deadline").value), budget = dollars($("#budget").value);
  if (deadline) shapes.push({ type: "line", x0: deadline, x1: deadline, y0: 0, y1: 1, yref: "paper", line: { color: "#64748b", dash: "dash" } });
  if (budget) shapes.push({ type: "line", y0: budget, y1: budget, x0: 0, x1: 1, xref: "paper", line: { color: "#64748b", dash: "dash" } });
  const layout = { ...LAYOUT, hovermode: "closest", shapes,
    xaxis: { title: { text: `${timeLabel} (hours, log scale)` }, type: "log", gridcolor: "#e2e8f0" },
    yaxis: { title: { text: `${costLabel} (USD, log scale)` }, type: "log", gridcolor: "#e2e8f0" } };
  Plotly.react(el_, traces, layout, PLOT_CONFIG);
  const text = plan.infeasible ? plan.infeasible : plan.summary.split("\n").slice(1).join(" · ");
  $("#plan-summary").textContent = text.replace(/<=/g, "≤").replace(/>=/g, "≥");
}

function hours(text) {
  const m = /^\s*([\d.e+-]+)\s*(h|hour|hours|hr|min|minute|minutes|d|day|days|s|second|seconds)?\s*$/i.exec(text || "");
  if (!m) return null;
  const x = Number(m[1]), u = (m[2] || "h").toLowerCase();
  return u.startsWith("min") ? x / 60 : u.startsWith("d") ? x * 24 : u.startsWith("s") ? x / 3600 : x;
}
function dollars(text) {
  const m = /^\s*\$?\s*([\d.e+,-]+)\s*(USD|dollar|dollars)?\s*$/i.exec(text || "");
  return m ? Number(m[1].replace(/,/g, "")) : null;
}

// ---------------------------------------------------------------- the derivation

function prettyEquation(text) {
  let html = escapeHtml(text).replace(/ x /g, " × ").replace(/&lt;=/g, "≤").replace(/&gt;=/g, "≥").replace(/sqrt/g, "√");
  html = html.replace(/\balpha_([a-z]+)\b/g, "α<sub>$1</sub>");
  html = html.replace(/\b([A-Za-z])_([a-z]+)\b/g, "$1<sub>$2</sub>");
  return html;
}

function renderExplain(data) {
  state.explain = data;
  $("#model").textContent = `Model: ${data.model}`;
  const list = $("#steps");
  list.replaceChildren();
  for (const s of data.steps) {
    const slug = s.quantity.replace(/[^a-z]+/gi, "-").toLowerCase();
    list.append(el("li", { class: "step", id: `step-${slug}`, "data-step": s.quantity },
      el("div", { class: "step-name", text: s.quantity }),
      el("div", { class: "step-eq", html: prettyEquation(s.equation) }),
      s.numbers ? el("div", { class: "step-num", html: `= ${prettyEquation(s.numbers)}` }) : null,
      s.value ? el("div", { class: "step-val", text: `= ${s.value}` }) : null));
  }
}

// ---------------------------------------------------------------- teaching mode

function hideForGuess() {
  state.revealed = false;
  $("#teach-panel").hidden = false;
  $("#teach-feedback").hidden = true;
  $("#revealable").classList.add("veiled");
}

function showTeach() {
  if ($("#teach").checked) hideForGuess();
  else { $("#teach-panel").hidden = true; $("#revealable").classList.remove("veiled"); }
}

function reveal() {
  const guess = Number($("#guess").value);
  const box = $("#teach-feedback");
  if ($("#guess").value.trim() === "" || !(guess >= 0 && guess <= 100)) {
    box.hidden = false; box.textContent = "Type a guess between 0 and 100 first."; return;
  }
  const r = state.lastGood.result;
  const model = r.efficiency * 100;
  const gap = guess - model;
  const parts = [["compute", r.compute_time.value], ["intra time", r.intra_time.value], ["inter time", r.inter_time.value], ["synchronization", r.synchronization_time.value]];
  const overlap = r.hidden_communication_time.value > 0;
  const waits = parts.slice(1).filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]);
  let stepName = "efficiency", why;
  if (Math.abs(gap) < 5) why = "Close! The derivation below shows each step.";
  else if (gap > 0 && waits.length) {
    stepName = overlap && waits[0][0] !== "synchronization" ? "overlap" : waits[0][0];
    why = `The model is lower: each update waits ${fmtTimeMs(r.update_time.value - r.compute_time.value)} beyond the ${fmtTimeMs(r.compute_time.value)} of compute, mostly in the ${waits[0][0].replace(" time", "-node AllReduce").replace("synchronization", "synchronisation")}. This step explains it:`;
  } else if (gap > 0) why = "The model is lower than your guess; see how efficiency follows from the update time:";
  else { stepName = "efficiency"; why = `The model is higher: compute (${fmtTimeMs(r.compute_time.value)}) dominates each update, so adding devices costs little. This step shows it:`; }
  const step = (state.explain?.steps || []).find((s) => s.quantity === stepName) || (state.explain?.steps || []).find((s) => s.quantity === "efficiency");
  box.replaceChildren(
    el("div", { class: "guess-vs-model" },
      el("div", {}, el("div", { class: "figure-title", text: "Your guess" }), el("div", { class: "figure-value", "data-field": "guess", "data-value": String(guess / 100), text: `${guess.toFixed(0)} %` })),
      el("div", {}, el("div", { class: "figure-title", text: "The model" }), el("div", { class: "figure-value", text: `${model.toFixed(1)} %` })),
      el("div", {}, el("div", { class: "figure-title", text: "Gap" }), el("div", { class: `figure-value ${Math.abs(gap) < 5 ? "good" : "warn-text"}`, text: `${gap > 0 ? "+" : ""}${gap.toFixed(1)} pt` }))),
    el("p", { text: why }),
    step ? el("div", { class: "step highlight", "data-explains": step.quantity },
      el("div", { class: "step-name", text: step.quantity }),
      el("div", { class: "step-eq", html: prettyEquation(step.equation) }),
      step.numbers ? el("div", { class: "step-num", html: `= ${prettyEquation(step.numbers)}` }) : null,
      step.value ? el("div", { class: "step-val", text: `= ${step.value}` }) : null) : null);
  box.hidden = false;
  state.revealed = true;
  $("#revealable").classList.remove("veiled");
  for (const li of $$("#steps .step")) li.classList.toggle("highlight", step && li.dataset.step === step.quantity);
}

// ---------------------------------------------------------------- start

async function start() {
  try {
    const answer = await api("/api/registry", "");
    state.registry = answer.body;
  } catch (err) { setStatus(`Cannot reach the mlsysim server (${err}).`, "bad"); return; }
  state.fields = state.registry.fields;
  const pick = $("#scenario");
  for (const s of state.registry.scenarios) pick.append(el("option", { value: s.name, text: s.name }));
  buildForm();
  chartButtons();
  loadFromUrl();
  pick.addEventListener("change", () => { fillFrom(baseValues()); syncWorkload(); state.unknown = []; describeScenario(); schedule(); });
  $("#teach").addEventListener("change", () => { showTeach(); update(); });
  $("#reveal").addEventListener("click", reveal);
  $("#guess").addEventListener("keydown", (e) => { if (e.key === "Enter") reveal(); });
  for (const k of ["deadline", "budget", "max_global_batch", "objective"]) $(`#${k}`).addEventListener(k === "objective" ? "change" : "input", () => {
    clearTimeout(state.planTimer);
    state.planTimer = setTimeout(() => { state.planTimer = null; history.replaceState(null, "", `?${query(state.unknown || [])}`); updatePlan(); }, 250);
    busy(0);
  });
  $("#copy-link").addEventListener("click", async () => {
    const b = $("#copy-link");
    try { await navigator.clipboard.writeText(location.href); b.textContent = "Link copied"; }
    catch { setStatus(`Copy this link: ${location.href}`, ""); }
    setTimeout(() => { b.textContent = "Copy link"; }, 1500);
  });
  showTeach();
  await update();
  document.body.dataset.ready = "true";
}

document.addEventListener("DOMContentLoaded", start);
