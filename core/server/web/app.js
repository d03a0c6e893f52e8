// The flowdbg web debugger: a client of the debug server's protocol (docs/server.md).
//
// Requests carry the token as "Authorization: Bearer"; the WebSocket, which cannot send that
// header from a browser, takes it as ?token=. The page's own modules are imported with the
// token in their URLs, like every file the server serves.

const TOKEN = new URL(import.meta.url).searchParams.get("token") || new URLSearchParams(location.search).get("token") || "";
const withToken = (path) => `${path}?token=${encodeURIComponent(TOKEN)}`;
const dagre = await import(withToken("./vendor/dagre.esm.js"));
const { GraphView, nodeId } = await import(withToken("./graph.js"));
const { renderTree, joinPath } = await import(withToken("./tree.js"));

const $ = (id) => document.getElementById(id);

// ------------------------------------------------------------------------------ the API

class ApiError extends Error {
  constructor(status, type, message) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

async function api(method, path, body) {
  const init = { method, headers: { Authorization: `Bearer ${TOKEN}`, Accept: "application/json" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const err = (data && data.error) || {};
    throw new ApiError(response.status, err.type || "HTTPError", err.message || `${method} ${path}: ${response.status}`);
  }
  return data;
}

const get = (path) => api("GET", path);
const post = (path, body) => api("POST", path, body === undefined ? {} : body);
const del = (path) => api("DELETE", path);

// A message in the bottom corner, where it hides no control; it goes after a few seconds or
// at its × (not while the pointer rests on it, to be read).
function showAlert(message) {
  const box = $("alert");
  $("alert-text").textContent = message;
  box.hidden = false;
  armAlert();
}

function armAlert() {
  clearTimeout(showAlert.timer);
  showAlert.timer = setTimeout(() => {
    $("alert").hidden = true;
  }, 6000);
}

$("alert-close").addEventListener("click", () => {
  clearTimeout(showAlert.timer);
  $("alert").hidden = true;
});
$("alert").addEventListener("mouseenter", () => clearTimeout(showAlert.timer));
$("alert").addEventListener("mouseleave", armAlert);

/** A server's breakpoint warning as this page's user can act on it: the request fields it
 * advises ("kind", "strict") are not in the page's form; what the form has is. */
function forPage(warning) {
  return warning
    .replace('give "kind": ["tool"] or ["llm"] for a call a node makes', 'pick "tool call" under Where for a tool a node calls')
    .replace(/; set it with "strict": true to have it refused instead\)$/, "; remove it here if the name is wrong)");
}

async function attempt(fn) {
  try {
    return await fn();
  } catch (err) {
    showAlert(err.message || String(err));
    return undefined;
  }
}

/** Run ``fn`` once after the current burst of calls (at most one at a time, the latest). */
function coalesce(fn) {
  let pending = false;
  let running = null;
  return function trigger() {
    if (pending) return;
    pending = true;
    queueMicrotask(async () => {
      if (running) await running.catch(() => {});
      pending = false;
      running = Promise.resolve().then(fn);
      await running.catch((err) => showAlert(err.message || String(err)));
      running = null;
    });
  };
}

/** ``fn`` run at most once every ``ms`` milliseconds however often it is asked for (the
 * last ask is never lost): a busy run's events must not become a flood of requests, which
 * the server's rate limit would refuse. */
function throttle(fn, ms) {
  let last = 0;
  let timer = null;
  const run = coalesce(async () => {
    last = Date.now();
    await fn();
  });
  return function trigger() {
    if (timer !== null) return;
    timer = setTimeout(() => {
      timer = null;
      run();
    }, Math.max(0, last + ms - Date.now()));
  };
}

const short = (id) => (id ? String(id).slice(0, 8) : "");
const clip = (text, most) => (text.length > most ? `${text.slice(0, most - 1)}…` : text);

// ------------------------------------------------------------------------------- state

const ui = {
  target: null,
  stops: [], // the open stops (GET /stops), oldest first
  selected: null, // the selected stop's id
  view: null, // the view shown of it
  breakpoints: [],
  runs: new Map(), // run id -> {name, parent, path, status, depth}
  currentRun: null,
  lastSeq: null,
  // the sequence number of the last event that ended each run, and each graph node's last unit
  // (a status read before it is older: see refreshStatus)
  endedRuns: new Map(),
  endedNodes: new Map(),
  heldAt: new Map(), // stop id -> node id
  gone: new Set(), // ids of stops resumed (their stop event may come after)
  active: new Set(), // top-level runs started and not ended
  statusRead: false,
  reconnecting: false,
  capabilities: new Map(), // adapter name -> Set of its capabilities (GET /adapters)
};

// ----------------------------------------------------------------------- capabilities

async function loadCapabilities() {
  const data = await get("/adapters");
  for (const a of data.adapters || []) ui.capabilities.set(a.name, new Set(a.capabilities || []));
  if (ui.target && Array.isArray(ui.target.capabilities)) ui.capabilities.set(ui.target.adapter, new Set(ui.target.capabilities));
}

/** Whether adapter ``name`` declares ``capability`` (unknown adapters are let try: the server
 * refuses with its reason). */
function can(name, capability) {
  const caps = ui.capabilities.get(name);
  return !caps || caps.has(capability);
}

/** Enable ``button``, or disable it with ``why`` as its tooltip (and in ``note`` when given). */
function offer(button, ok, why, note = null) {
  button.disabled = !ok;
  button.title = ok ? button.dataset.title || "" : why;
  if (note) note.textContent = ok ? note.dataset.text || note.textContent : why;
}

const graph = new GraphView($("graph"), dagre, { onToggle: toggleBreakpoint, onToggleTool: toggleToolBreakpoint });

// ---------------------------------------------------------------------------- the graph

async function loadTarget() {
  const info = await get("/");
  if (!info.target) {
    $("target").textContent = "no target: recorded runs only";
    $("run-start").disabled = true;
    graph.setDescription(null);
    return;
  }
  ui.target = info.target;
  $("target").textContent = `${info.target.target} (${info.target.adapter})`;
  $("target").title = $("target").textContent;
  document.title = `flowdbg: ${info.target.target}`;
  if (info.target.example_input !== null && info.target.example_input !== undefined) {
    $("run-input").value = JSON.stringify(info.target.example_input);
  }
  graph.setDescription(info.target.graph);
  fillNodeSelect();
}

function fillNodeSelect() {
  const list = $("bp-names");
  list.textContent = "";
  const names = new Set(graph.unitIds().map((id) => id.split("/").pop()));
  for (const tool of (ui.target && ui.target.graph && ui.target.graph.tools) || []) {
    names.add(typeof tool === "object" && tool ? String(tool.name) : String(tool));
  }
  for (const name of names) {
    const option = document.createElement("option");
    option.value = name;
    list.appendChild(option);
  }
}

async function toggleBreakpoint(id, type) {
  const name = id.split("/").pop();
  const existing = ui.breakpoints.filter((bp) => bp.type === "node" && bp.pattern === name && (bp.positions || []).includes(type));
  await attempt(async () => {
    if (existing.length) {
      for (const bp of existing) await del(`/breakpoints/${encodeURIComponent(bp.id)}`);
    } else {
      const made = await post("/breakpoints", { type, pattern: name });
      for (const warning of made.warnings || []) showAlert(forPage(warning));
    }
  });
  await refreshBreakpoints();
}

/** Set a breakpoint on the calls of tool ``name``, or remove the ones there are. */
async function toggleToolBreakpoint(name) {
  const existing = ui.breakpoints.filter((bp) => bp.type === "tool" && bp.pattern === name && !bp.args_pattern && !bp.condition);
  await attempt(async () => {
    if (existing.length) {
      for (const bp of existing) await del(`/breakpoints/${encodeURIComponent(bp.id)}`);
    } else {
      const made = await post("/breakpoints", { type: "tool", pattern: name });
      for (const warning of made.warnings || []) showAlert(forPage(warning));
    }
  });
  await refreshBreakpoints();
}

// ------------------------------------------------------------------------ breakpoints

const refreshBreakpoints = async () => {
  const data = await get("/breakpoints");
  ui.breakpoints = data.breakpoints;
  graph.setBreakpoints(ui.breakpoints);
  $("bp-count").textContent = String(ui.breakpoints.length);
  const list = $("bp-list");
  list.textContent = "";
  if (!ui.breakpoints.length) {
    const li = document.createElement("li");
    li.className = "muted";
    li.textContent = "No breakpoint. Click a node in the graph, or add one here.";
    list.appendChild(li);
  }
  for (const bp of ui.breakpoints) {
    const li = document.createElement("li");
    li.dataset.bp = bp.id;
    const text = document.createElement("span");
    const where = bp.type === "node" ? `${(bp.positions || []).join("/")} ${bp.pattern}` : `${bp.type} ${bp.pattern}`;
    text.textContent = `${bp.id}: ${where}${bp.message ? ` "${bp.message}"` : ""}${bp.condition ? ` if ${bp.condition}` : ""}${bp.hit_condition ? ` (hit ${bp.hit_condition})` : ""} · ${bp.hits} hit${bp.hits === 1 ? "" : "s"}`;
    li.appendChild(text);
    const remove = document.createElement("button");
    remove.type = "button";
    remove.className = "small-btn";
    remove.textContent = "remove";
    remove.setAttribute("aria-label", `remove breakpoint ${bp.id}`);
    remove.addEventListener("click", async () => {
      await attempt(() => del(`/breakpoints/${encodeURIComponent(bp.id)}`));
      await refreshBreakpoints();
    });
    li.appendChild(remove);
    list.appendChild(li);
  }
};

$("bp-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const condition = $("bp-condition").value.trim();
  const body = { type: $("bp-type").value, pattern: $("bp-node").value.trim() || "*" };
  if (condition) body.condition = condition;
  if (body.type === "log") body.message = $("bp-message").value;
  const hit = $("bp-hit").value.trim();
  if (hit) body.hit_condition = hit;
  const made = await attempt(() => post("/breakpoints", body));
  if (made) {
    $("bp-hit").value = "";
    $("bp-condition").value = "";
    $("bp-message").value = "";
    $("bp-node").value = "";
    for (const warning of made.warnings || []) showAlert(forPage(warning));
  }
  await refreshBreakpoints();
});

$("bp-clear").addEventListener("click", async () => {
  await attempt(() => del("/breakpoints"));
  await refreshBreakpoints();
});

$("eval-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const stop = selectedStop();
  const expression = $("eval-input").value.trim();
  if (!stop || !expression) return;
  const box = $("eval-result");
  box.hidden = false;
  box.classList.remove("failed");
  try {
    const result = await post(`/stops/${encodeURIComponent(stop.id)}/evaluate`, { expression });
    box.textContent = `${expression} = ${JSON.stringify(result.value, null, 1)}`;
  } catch (err) {
    box.classList.add("failed");
    box.textContent = `${err.type}: ${err.message}`;
  }
});

// A value typed for an edit: JSON, else the plain text as a string.
function readValue(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

// The edits a rewind or a fork applies to the recorded state first: one PATH=VALUE a line, the
// value read as the tree's edits read it (JSON, else plain text as a string); null for none.
function parseEdits(text) {
  const edits = {};
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line) continue;
    const at = line.indexOf("=");
    const path = at < 0 ? "" : line.slice(0, at).trim();
    if (!path) {
      throw new Error(`an edit is PATH=VALUE, one a line, not ${JSON.stringify(line)} (e.g. intent="question")`);
    }
    edits[path] = readValue(line.slice(at + 1).trim());
  }
  return Object.keys(edits).length ? edits : null;
}

$("rewind-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const stop = selectedStop();
  const step = Number($("rewind-step").value);
  if (!stop || !Number.isInteger(step) || step < 0) return;
  const box = $("stop-error");
  try {
    const edits = parseEdits($("rewind-edits").value);
    const done = await post(`/stops/${encodeURIComponent(stop.id)}/rewind`, edits ? { step, edits } : { step });
    box.hidden = true;
    const told = edits ? `, with ${Object.keys(edits).join(", ")} edited` : "";
    logLine(`rewound run ${short(done.run_id)} to the state after step ${done.step}${told}`);
    $("rewind-edits").value = "";
    dropStop(stop.id);
  } catch (err) {
    box.hidden = false; // refused (a step that has not ended, say): the stop stays held
    box.textContent = err.message;
  }
});

$("bp-type").addEventListener("change", () => {
  $("bp-message-label").hidden = $("bp-type").value !== "log";
});

// ------------------------------------------------------------------------------ stops

function locationText(loc) {
  const where = [...(loc.path || []), loc.node].join(" › ");
  const parts = [`${loc.position} ${loc.kind} ${where}`, `step ${loc.step}`];
  if (loc.superstep !== null && loc.superstep !== undefined) parts.push(`superstep ${loc.superstep}`);
  // a framework's branch ids can be long (LangGraph's are UUIDs): their start tells them apart
  if (loc.branch) parts.push(`branch ${loc.branch.length > 14 ? `${loc.branch.slice(0, 8)}…` : loc.branch}`);
  return parts.join(" · ");
}

// The open stops: read whole once (GET /stops), then kept from the events: a stop event
// fetches that stop (GET /stops/{id}), a resume event drops it. A stop carries its values,
// which may be large, so the list is not read again at every event.
const syncStops = coalesce(async () => {
  const data = await get("/stops");
  ui.stops = data.stops;
  applyStops(true);
});

async function addStop(stopId) {
  let stop;
  try {
    stop = await get(`/stops/${encodeURIComponent(stopId)}`);
  } catch (err) {
    if (err.status === 404) return; // resumed already: its resume event drops it
    throw err;
  }
  if (ui.stops.some((s) => s.id === stop.id) || ui.gone.has(stop.id)) return;
  ui.stops.push(stop);
  ui.stops.sort((a, b) => a.created_at - b.created_at);
  applyStops(ui.selected === null);
}

function dropStop(stopId) {
  ui.gone.add(stopId);
  const before = ui.stops.length;
  ui.stops = ui.stops.filter((s) => s.id !== stopId);
  if (ui.stops.length !== before) applyStops(ui.selected === stopId);
}

function replaceStop(stop) {
  ui.stops = ui.stops.map((s) => (s.id === stop.id ? stop : s));
  applyStops(ui.selected === stop.id);
}

function applyStops(detail) {
  const ids = new Set(ui.stops.map((s) => s.id));
  // nodes held at a stop that is gone are running again until their step event
  for (const [stopId, node] of ui.heldAt) {
    if (!ids.has(stopId)) {
      ui.heldAt.delete(stopId);
      if (graph.state(node) === "held" && ![...ui.heldAt.values()].includes(node)) graph.setState(node, "running");
    }
  }
  for (const stop of ui.stops) {
    const id = graph.shown(stop.location.path, stop.location.node);
    if (id === null) continue;
    ui.heldAt.set(stop.id, id);
    graph.setState(id, "held");
  }
  if (!ids.has(ui.selected)) {
    ui.selected = ui.stops.length ? ui.stops[0].id : null;
    ui.view = null;
    detail = true;
  }
  renderStops();
  updateBadge();
  drawTimeline();
  if (detail) attempt(renderStopDetail);
}

function renderStops() {
  $("stop-count").textContent = String(ui.stops.length);
  $("no-stops").hidden = ui.stops.length > 0;
  const list = $("stop-list");
  list.textContent = "";
  for (const stop of ui.stops) {
    const li = document.createElement("li");
    li.className = `stop${stop.id === ui.selected ? " selected" : ""}`;
    li.dataset.stop = stop.id;
    li.dataset.stopNode = stop.location.node;
    const pick = document.createElement("button");
    pick.type = "button";
    pick.className = "stop-pick";
    pick.setAttribute("aria-pressed", String(stop.id === ui.selected));
    const reason = document.createElement("strong");
    reason.textContent = stop.reason;
    pick.appendChild(reason);
    pick.append(` ${locationText(stop.location)}`);
    if (stop.message) pick.append(` — ${stop.message}`);
    for (const change of stop.watched || []) {
      // as gdb shows a watchpoint: the value before the unit, then the one now
      const shown = (missing, value) => (missing ? "(missing)" : clip(JSON.stringify(value), 40));
      pick.append(` — watch ${change.path}: ${shown(change.added, change.old)} → ${shown(change.removed, change.new)}`);
    }
    pick.addEventListener("click", () => {
      ui.selected = stop.id;
      ui.view = null;
      renderStops();
      renderStopDetail();
    });
    li.appendChild(pick);
    const actions = document.createElement("div");
    actions.className = "stop-actions";
    for (const [action, label] of [["continue", "Continue"], ["step_over", "Step over"], ["step_into", "Step into"], ["step_out", "Step out"]]) {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "small-btn";
      b.textContent = label;
      b.dataset.action = action;
      b.setAttribute("aria-label", `${label} ${stop.location.node} (${stop.id})`);
      b.addEventListener("click", () => resume(stop.id, action));
      actions.appendChild(b);
    }
    li.appendChild(actions);
    list.appendChild(li);
  }
  for (const id of ["btn-continue", "btn-step-over", "btn-step-into", "btn-step-out"]) $(id).disabled = !ui.selected;
}

async function resume(stopId, action) {
  if (!stopId) return;
  const done = await attempt(() => post(`/stops/${encodeURIComponent(stopId)}/${action}`));
  if (done) dropStop(stopId);
  else syncStops(); // it was gone already: read the list again
}

function selectedStop() {
  return ui.stops.find((s) => s.id === ui.selected) || null;
}

async function renderStopDetail() {
  const stop = selectedStop();
  $("stop-detail").hidden = !stop;
  $("stop-error").hidden = true;
  if (!stop || $("eval-result").dataset.stop !== stop.id) {
    $("eval-result").hidden = true;
    $("eval-result").dataset.stop = stop ? stop.id : "";
  }
  if (!stop) return;
  if ($("rewind-form").dataset.stop !== stop.id) {
    $("rewind-form").dataset.stop = stop.id;
    $("rewind-step").value = String(Math.max((stop.location.step || 1) - 1, 0));
  }
  const framework = stop.location.framework;
  const rewinds = can(framework, "rewind");
  const instead = can(framework, "fork") ? "fork the run from the Record tab once it has ended" : "set a breakpoint where you want to look and run it again";
  offer($("rewind-go"), rewinds, `the ${framework} adapter cannot rewind a run: ${instead}`, $("rewind-note"));
  $("rewind-step").disabled = !rewinds;
  $("rewind-edits").disabled = !rewinds;
  const views = stop.views && stop.views.length ? stop.views : [stop.default_view];
  if (!ui.view || !views.includes(ui.view)) ui.view = stop.default_view;
  const tabs = $("view-tabs");
  tabs.textContent = "";
  for (const view of views) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "view-tab";
    b.dataset.view = view;
    b.setAttribute("aria-pressed", String(view === ui.view));
    b.textContent = view + (view === stop.default_view ? " (default)" : "");
    b.addEventListener("click", () => {
      ui.view = view;
      renderStopDetail();
    });
    tabs.appendChild(b);
  }
  const editable = stop.editable && ui.view === stop.editable;
  $("edit-hint").textContent = editable
    ? `Edits to ${ui.view} apply when the branch resumes.`
    : stop.editable
      ? `Read-only here; edit the ${stop.editable} view.`
      : "Nothing is editable at this stop.";
  let changes = [];
  if (stop.location.position !== "before") {
    const diff = await get(`/stops/${encodeURIComponent(stop.id)}/diff`).catch(() => null);
    changes = diff ? diff.changes : [];
  }
  const value = await get(`/stops/${encodeURIComponent(stop.id)}/value?path=${encodeURIComponent(`${ui.view}:`)}`);
  if (ui.selected !== stop.id) return; // another stop was chosen meanwhile
  const changed = new Set(changes.map((c) => c.path));
  const view = ui.view;
  renderTree($("tree"), value.value, {
    editable,
    changed: view === "state" || view === stop.default_view ? changed : null,
    fetch: async (path) => (await get(`/stops/${encodeURIComponent(stop.id)}/value?path=${encodeURIComponent(`${view}:${path}`)}`)).value,
    onEdit: async (path, text) => {
      try {
        replaceStop(await post(`/stops/${encodeURIComponent(stop.id)}/set`, { path, value: readValue(text) }));
      } catch (err) {
        const box = $("stop-error");
        box.textContent = `${err.type}: ${err.message}`;
        box.hidden = false;
        throw err;
      }
    },
  });
  const diffBox = $("diff");
  diffBox.hidden = !changes.length;
  const list = $("diff-list");
  list.textContent = "";
  for (const change of changes) {
    const li = document.createElement("li");
    li.className = `change ${change.kind}`;
    li.dataset.path = change.path;
    const fmt = (v) => {
      const t = JSON.stringify(v);
      return t && t.length > 120 ? `${t.slice(0, 120)}…` : t;
    };
    li.textContent = change.kind === "added" ? `+ ${change.path} = ${fmt(change.new)}` : change.kind === "removed" ? `− ${change.path} (was ${fmt(change.old)})` : `~ ${change.path}: ${fmt(change.old)} → ${fmt(change.new)}`;
    list.appendChild(li);
  }
}

// ---------------------------------------------------------------------------- controls

$("btn-continue").addEventListener("click", () => resume(ui.selected, "continue"));
$("btn-step-over").addEventListener("click", () => resume(ui.selected, "step_over"));
$("btn-step-into").addEventListener("click", () => resume(ui.selected, "step_into"));
$("btn-step-out").addEventListener("click", () => resume(ui.selected, "step_out"));
$("btn-pause").addEventListener("click", () => attempt(() => post("/pause")));
$("btn-terminate").addEventListener("click", async () => {
  const done = await attempt(() => post("/terminate"));
  if (done) logLine(`terminated ${done.runs.length} run(s)`, "log-run");
  syncStops();
});

document.addEventListener("keydown", (ev) => {
  const t = ev.target;
  if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable)) return;
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const keys = {
    F8: "btn-continue",
    c: "btn-continue",
    F10: "btn-step-over",
    n: "btn-step-over",
    F11: ev.shiftKey ? "btn-step-out" : "btn-step-into",
    s: "btn-step-into",
    r: "btn-step-out",
    F6: "btn-pause",
    p: "btn-pause",
  };
  const id = keys[ev.key];
  if (!id) return;
  ev.preventDefault();
  const button = $(id);
  if (!button.disabled) button.click();
});

$("run-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  let input;
  try {
    input = JSON.parse($("run-input").value || "{}");
  } catch (err) {
    showAlert(`the input is not JSON: ${err.message}`);
    return;
  }
  const field = $("run-config");
  const text = field.value.trim();
  let config = null;
  try {
    config = text ? JSON.parse(text) : null;
  } catch (err) {
    config = undefined;
    field.classList.add("invalid");
    showAlert(`the config is not JSON (${err.message}): give an object such as {"context": {"user": "ada"}}, or leave it empty`);
  }
  if (config === undefined) return;
  if (config !== null && (typeof config !== "object" || Array.isArray(config))) {
    field.classList.add("invalid");
    showAlert(`the config must be a JSON object such as {"context": {"user": "ada"}}, not ${text}`);
    return;
  }
  field.classList.remove("invalid");
  const body = config === null ? { input } : { input, config };
  const started = await attempt(() => post("/runs", body));
  if (started) logLine(`started run ${short(started.run_id)}`, "log-run");
});

// -------------------------------------------------------------------------- the run

// heldSlots: "run|step" -> the lane (of its run) a unit held at a stop is drawn in; the unit's
// block goes there when it ends, so a lane opened for units held side by side keeps them
const timeline = { lanes: new Map(), blocks: [], t0: null, t1: null, heldSlots: new Map() };

// A lane per run (nested runs under their parent's), and more lanes for a run's parallel
// branches: units of one superstep are parallel, so the second unit of a superstep takes a
// second lane; without supersteps, a unit takes the first lane of its run free when it
// starts. Model and tool calls are drawn inside the lane of the unit that made them.
const slots = new Map(); // "run|superstep" -> units placed
// units made inside another unit of their run: model and tool calls, an agent's handoffs
const CALLS = new Set(["tool", "llm", "handoff"]);

function placeBlock(runId, start, end, superstep, kind, slotWanted = null) {
  const run = ui.runs.get(runId) || { name: short(runId), depth: 0 };
  let wanted = null;
  if (CALLS.has(kind) && slotWanted === null) wanted = 0;
  else if (superstep !== null && superstep !== undefined) {
    // the framework's supersteps say which units ran side by side
    const key = `${runId}|${superstep}`;
    wanted = slots.get(key) || 0;
    slots.set(key, wanted + 1);
  } else {
    // a stop's marker, or a unit held beside another (see drawTimeline); null: the first lane
    // free when it starts
    wanted = slotWanted;
  }
  let slot = 0;
  for (;;) {
    const key = `${runId}|${slot}`;
    const lane = timeline.lanes.get(key);
    if (!lane) {
      const entries = [...timeline.lanes.entries()];
      // after the last lane of this run or, for a new nested run, of its parent
      let at = entries.length;
      const family = entries.map(([k], i) => [k, i]).filter(([k]) => k.startsWith(`${runId}|`) || (run.parent && k.startsWith(`${run.parent}|`)));
      if (family.length) at = family[family.length - 1][1] + 1;
      entries.splice(at, 0, [key, { runId, label: slot ? `${run.name} ∥${slot + 1}` : `${run.name} ${short(runId)}`, depth: run.depth || 0, busyUntil: -Infinity }]);
      timeline.lanes = new Map(entries);
      continue;
    }
    if (wanted === slot || (wanted === null && lane.busyUntil <= start)) {
      // a call is drawn over its node, whose lane it does not take
      if (!CALLS.has(kind)) lane.busyUntil = Math.max(lane.busyUntil, end);
      return key;
    }
    slot += 1;
  }
}

const drawTimeline = coalesce(() => {
  const box = $("timeline");
  box.textContent = "";
  // the units held now, drawn from their stop to now: a lane each in their run's lanes
  const held = [];
  const perRun = new Map();
  let t0 = timeline.t0;
  let t1 = timeline.t1;
  for (const stop of ui.stops) {
    const runId = stop.location.run_id;
    if (!ui.runs.has(runId)) continue; // a run started before the page was opened
    const taken = perRun.get(runId) || new Set();
    perRun.set(runId, taken);
    // a unit keeps the lane it was first held in (its before and after stops, its block)
    const unit = `${runId}|${stop.location.step}`;
    let slot = timeline.heldSlots.get(unit);
    if (slot === undefined || taken.has(slot)) {
      slot = 0;
      while (taken.has(slot)) slot += 1;
      timeline.heldSlots.set(unit, slot);
    }
    taken.add(slot);
    // a marker of the stop: it takes no time of the lane ("llm": drawn over, like a call)
    const lane = placeBlock(runId, stop.created_at, stop.created_at, null, "llm", slot);
    held.push({ lane, node: stop.location.node, start: stop.created_at });
    t0 = t0 === null ? stop.created_at : Math.min(t0, stop.created_at);
  }
  if (held.length) t1 = Math.max(t1 ?? t0, Date.now() / 1000, ...held.map((h) => h.start));
  if (!timeline.blocks.length && !held.length) {
    const p = document.createElement("p");
    p.className = "muted small";
    p.textContent = "The units of the current run appear here as they finish: a lane per run, more for parallel branches.";
    box.appendChild(p);
    return;
  }
  const span = Math.max(t1 - t0, 1e-3);
  for (const [key, lane] of timeline.lanes) {
    const row = document.createElement("div");
    row.className = "lane";
    row.dataset.lane = key;
    const label = document.createElement("span");
    label.className = `lane-label depth-${Math.min(lane.depth, 3)}`;
    label.textContent = lane.label;
    label.title = `run ${lane.runId}`;
    row.dataset.run = lane.runId;
    row.appendChild(label);
    const track = document.createElement("div");
    track.className = "track";
    for (const b of timeline.blocks) {
      if (b.lane !== key) continue;
      const block = document.createElement("span");
      block.className = `block k-${b.kind} s-${b.status}`;
      block.dataset.unit = b.node;
      const left = ((b.start - t0) / span) * 100;
      const width = Math.max(((b.end - b.start) / span) * 100, 0.6);
      block.style.left = `${left}%`;
      block.style.width = `${Math.min(width, 100 - left)}%`;
      block.title = `${b.node} (${b.kind}) step ${b.step}: ${b.status}, ${((b.end - b.start) * 1000).toFixed(1)} ms`;
      block.textContent = b.node;
      track.appendChild(block);
    }
    for (const h of held) {
      if (h.lane !== key) continue;
      const block = document.createElement("span");
      block.className = "block held";
      block.dataset.unit = h.node;
      const left = Math.min(((h.start - t0) / span) * 100, 96);
      block.style.left = `${left}%`;
      block.style.width = `${Math.max(100 - left, 4)}%`;
      block.title = `${h.node}: held at a stop`;
      block.textContent = `${h.node} (held)`;
      track.appendChild(block);
    }
    row.appendChild(track);
    box.appendChild(row);
  }
});

function logLine(text, kind = "") {
  const log = $("log");
  const li = document.createElement("li");
  li.className = kind;
  const time = new Date().toLocaleTimeString();
  li.textContent = `${time}  ${text}`;
  log.appendChild(li);
  while (log.children.length > 500) log.removeChild(log.firstChild);
  log.scrollTop = log.scrollHeight;
}

function clearTimeline() {
  slots.clear();
  timeline.heldSlots.clear();
  timeline.lanes.clear();
  timeline.blocks = [];
  timeline.t0 = timeline.t1 = null;
  drawTimeline();
}

$("run-clear").addEventListener("click", () => {
  clearTimeline();
  $("log").textContent = "";
});

// ---------------------------------------------------------------------------- events

// The debugger's state, from what the events say: stopped while a stop is open, running
// while a top-level run is active, else idle (GET /status tells it at start).
function updateBadge() {
  const state = ui.stops.length ? "stopped" : ui.active.size ? "running" : "idle";
  $("state").textContent = state;
  $("state").dataset.state = state;
}

// The units running now (GET /status), to show them running; read only while nothing is
// stopped, since the status carries the open stops with their values.
const refreshStatus = throttle(async () => {
  if (ui.stops.length && ui.statusRead) return;
  const seen = ui.lastSeq === null ? -1 : ui.lastSeq;
  const status = await get("/status");
  ui.statusRead = true;
  // Events that came while the status was on its way are newer than it: a run or unit it
  // says is running may have ended since (its event came first), and stays ended.
  const endedSince = (map, key) => (map.get(key) ?? -1) > seen;
  for (const runId of status.runs || []) {
    if (endedSince(ui.endedRuns, runId)) continue;
    if (!ui.runs.has(runId) || !ui.runs.get(runId).parent) ui.active.add(runId);
  }
  for (const unit of status.running || []) {
    const id = graph.shown(unit.path, unit.node);
    if (id === null || endedSince(ui.endedNodes, id)) continue;
    if (graph.state(id) !== "held") graph.setState(id, "running");
  }
  updateBadge();
}, 500);

const refreshRecord = throttle(async () => {
  await loadRuns();
  if (record.runId && !$("pane-record").hidden) await showMade(record.runId); // a fork ended
}, 1000);

function onEvent(message) {
  if (typeof message.seq === "number" && message.seq > 0) ui.lastSeq = message.seq;
  const data = message.data || {};
  switch (message.type) {
    case "run_start": {
      const parent = data.parent_run_id ? ui.runs.get(data.parent_run_id) : null;
      ui.runs.set(data.run_id, { name: data.name, parent: data.parent_run_id, depth: parent ? parent.depth + 1 : 0, status: data.status });
      if (!data.parent_run_id) {
        ui.active.add(data.run_id);
        ui.currentRun = data.run_id;
        graph.reset();
        clearTimeline();
        $("run-summary").textContent = `run ${short(data.run_id)} running`;
      }
      logLine(`run ${short(data.run_id)} (${data.name}) started${data.parent_run_id ? ` inside ${short(data.parent_run_id)}` : ""}`, "log-run");
      break;
    }
    case "run_end": {
      const run = ui.runs.get(data.run_id);
      if (run) run.status = data.status;
      ui.active.delete(data.run_id);
      ui.endedRuns.set(data.run_id, message.seq ?? 0);
      const error = data.error ? `: ${data.error.type}: ${data.error.message}` : "";
      logLine(`run ${short(data.run_id)} ${data.status}${error}`, data.error ? "log-error" : "log-run");
      if (data.run_id === ui.currentRun) $("run-summary").textContent = `run ${short(data.run_id)} ${data.status}`;
      refreshRecord();
      break;
    }
    case "step": {
      const id = nodeId(data.path, data.node);
      if (data.kind !== "llm" && graph.has(id) && (data.kind !== "tool" || graph.tools.has(id))) {
        graph.setState(id, data.status === "failed" ? "failed" : data.status === "running" ? "running" : "done");
        graph.addHit(id);
        if (data.status !== "running") ui.endedNodes.set(id, message.seq ?? 0);
      }
      const end = data.ended_at || message.time;
      const start = data.started_at || end;
      const held = CALLS.has(data.kind) ? undefined : timeline.heldSlots.get(`${data.run_id}|${data.step}`);
      const lane = placeBlock(data.run_id, start, end, data.superstep, data.kind, held ?? null);
      timeline.blocks.push({ lane, node: data.node, kind: data.kind, status: data.status, step: data.step, start, end });
      if (timeline.blocks.length > 2000) timeline.blocks.shift();
      timeline.t0 = timeline.t0 === null ? start : Math.min(timeline.t0, start);
      timeline.t1 = timeline.t1 === null ? end : Math.max(timeline.t1, end);
      drawTimeline();
      if (data.status === "failed") logLine(`${data.node} failed (step ${data.step})`, "log-error");
      break;
    }
    case "stop": {
      const id = graph.shown(data.location.path, data.location.node);
      if (id !== null) {
        graph.setState(id, "held");
        ui.heldAt.set(data.id, id);
      }
      logLine(`stop ${data.id}: ${data.reason} at ${locationText(data.location)}`, "log-stop");
      selectTab("stops");
      attempt(() => addStop(data.id));
      refreshBreakpoints();
      break;
    }
    case "resume":
      logLine(`stop ${data.stop} resumed (${data.action})`, "log-resume");
      dropStop(data.stop);
      break;
    case "log":
      logLine(`log ${data.breakpoint}: ${data.message}`, "log-point");
      break;
    case "released":
      logLine(`released stops ${(data.stops || []).join(", ")}: ${data.reason}`, "log-run");
      syncStops();
      break;
    case "gap":
      logLine(`missed events ${data.since + 1} to ${data.first_kept - 1}`, "log-error");
      syncStops();
      break;
    default:
      break; // a newer server's event type: ignored, as the protocol asks
  }
  updateBadge();
  if (message.type === "step" && !ui.stops.length) refreshStatus();
}

let backoff = 250;

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const since = ui.lastSeq === null ? "" : `&since=${ui.lastSeq}`;
  const ws = new WebSocket(`${scheme}://${location.host}/events?token=${encodeURIComponent(TOKEN)}${since}`);
  ws.addEventListener("open", () => {
    if (backoff > 250 || ui.reconnecting) syncStops(); // what changed while it was away
    ui.reconnecting = false;
    backoff = 250;
    $("conn").textContent = "live";
    $("conn").className = "badge conn-up";
  });
  ws.addEventListener("message", (ev) => {
    let message;
    try {
      message = JSON.parse(ev.data);
    } catch {
      return;
    }
    if (message.type === "hello") {
      if (ui.lastSeq === null) ui.lastSeq = message.data.last_seq;
      return;
    }
    onEvent(message);
  });
  ws.addEventListener("close", () => {
    ui.reconnecting = true;
    $("conn").textContent = "offline";
    $("conn").className = "badge conn-down";
    setTimeout(connect, backoff);
    backoff = Math.min(backoff * 2, 5000);
  });
}

// -------------------------------------------------------------------------- the record

let recordRuns = [];

async function loadRuns() {
  const params = new URLSearchParams({ limit: "50" });
  if ($("rec-status").value) params.set("status", $("rec-status").value);
  if ($("rec-name").value.trim()) params.set("name", $("rec-name").value.trim());
  if ($("rec-adapter").value) params.set("adapter", $("rec-adapter").value);
  if ($("rec-since").value) params.set("since", String(Date.now() / 1000 - Number($("rec-since").value)));
  let data;
  try {
    data = await get(`/records/runs?${params}`);
  } catch (err) {
    if (err.type === "NoRecording") {
      $("pane-record").querySelector("table tbody").innerHTML = "";
      showRecordNote(err.message);
      return;
    }
    throw err;
  }
  recordRuns = data.runs;
  const body = $("rec-runs").querySelector("tbody");
  body.textContent = "";
  for (const run of recordRuns) {
    const tr = document.createElement("tr");
    tr.dataset.run = run.run_id;
    tr.tabIndex = 0;
    tr.className = `s-${run.status}${run.run_id === record.runId ? " selected" : ""}`;
    const cells = [run.short_id, run.name, run.status, run.steps ?? "", run.started_at ? new Date(run.started_at).toLocaleTimeString() : ""];
    for (const c of cells) {
      const td = document.createElement("td");
      td.textContent = String(c);
      tr.appendChild(td);
    }
    const open = () => openRun(run.run_id);
    tr.addEventListener("click", open);
    tr.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") open();
    });
    body.appendChild(tr);
  }
  for (const [id, fallback] of [["rec-a", 1], ["rec-b", 0]]) {
    const select = $(id);
    const keep = select.value;
    select.textContent = "";
    for (const run of recordRuns) {
      const option = document.createElement("option");
      option.value = run.run_id;
      option.textContent = `${run.short_id} ${run.name} (${run.status})`;
      select.appendChild(option);
    }
    if (keep && recordRuns.some((r) => r.run_id === keep)) select.value = keep;
    else if (recordRuns[fallback]) select.value = recordRuns[fallback].run_id;
  }
  pairRuns("rec-a");
}

// The diff compares two runs: the two selectors never hold the same one while there are two
// (the one not just chosen moves to another run), and with one run there is nothing to diff.
function pairRuns(changed) {
  const mine = $(changed);
  const other = $(changed === "rec-a" ? "rec-b" : "rec-a");
  if (mine.value && mine.value === other.value) {
    const next = recordRuns.find((r) => r.run_id !== mine.value);
    if (next) other.value = next.run_id;
  }
  const two = recordRuns.length > 1;
  offer($("rec-diff-go"), two && $("rec-a").value !== $("rec-b").value, "record another run to compare it with: a run is never diffed with itself");
}

$("rec-a").addEventListener("change", () => pairRuns("rec-a"));
$("rec-b").addEventListener("change", () => pairRuns("rec-b"));

function showRecordNote(text) {
  const box = $("rec-diff");
  box.hidden = false;
  box.textContent = text;
}

const record = { runId: null, steps: [], token: 0, key: null };

async function openRun(runId) {
  for (const tr of $("rec-runs").querySelectorAll("tbody tr")) tr.classList.toggle("selected", tr.dataset.run === runId);
  const steps = [];
  let from = 1;
  for (;;) {
    const page = await get(`/records/runs/${encodeURIComponent(runId)}/steps?from_step=${from}&limit=1000`);
    steps.push(...page.steps);
    if (page.next_step === null || steps.length >= 5000) break;
    from = page.next_step;
  }
  record.runId = runId;
  record.steps = steps;
  record.key = null;
  $("rec-run").hidden = false;
  $("rec-run-title").textContent = `Run ${short(runId)}: ${steps.length} steps`;
  const list = $("rec-steps");
  list.textContent = "";
  steps.forEach((s, i) => {
    const li = document.createElement("li");
    const b = document.createElement("button");
    b.type = "button";
    b.className = `step-btn s-${s.status}`;
    b.dataset.step = String(s.step);
    b.textContent = `${s.step}. ${[...(s.path || []), s.node].join(" › ")}${s.kind !== "node" ? ` (${s.kind})` : ""}${s.status !== "completed" ? ` — ${s.status}` : ""}`;
    b.addEventListener("click", () => {
      $("rec-slider").value = String(i + 1);
      showStep();
    });
    li.appendChild(b);
    list.appendChild(li);
  });
  const slider = $("rec-slider");
  slider.min = "1";
  slider.max = String(Math.max(steps.length, 1));
  slider.value = String(Math.max(steps.length, 1));
  slider.disabled = !steps.length;
  $("rec-travel-note").textContent = "";
  const known = recordRuns.find((r) => r.run_id === runId);
  const framework = known ? known.framework : (await get(`/records/runs/${encodeURIComponent(runId)}`)).framework;
  if (framework) {
    const instead = can(framework, "cached_calls") ? "rerun it instead" : "start a run with its input from the toolbar";
    offer($("rec-fork"), can(framework, "fork"), `the ${framework} adapter cannot fork a run: ${instead}`);
    $("rec-edits").disabled = !can(framework, "fork");
    offer($("rec-rerun"), can(framework, "cached_calls"), `the ${framework} adapter cannot serve recorded model and tool calls in a rerun: start a run with its input instead`);
  }
  $("rec-divergence").hidden = true;
  await showStep();
  await showMade(runId);
}

async function showMade(runId) {
  const tree = await get(`/records/runs/${encodeURIComponent(runId)}/timeline`);
  const list = $("rec-made-list");
  list.textContent = "";
  const walk = (entry, depth) => {
    for (const made of entry.made) {
      const run = made.run;
      const li = document.createElement("li");
      li.style.marginLeft = `${depth}em`;
      const where = run.origin === "rerun" ? "" : run.fork_step ? ` after step ${run.fork_step}` : " from the input";
      const b = document.createElement("button");
      b.type = "button";
      b.className = "small-btn";
      b.dataset.run = run.run_id;
      b.textContent = `${run.origin} ${run.short_id}${where}: ${run.status}${made.cached ? `, ${made.cached} served from the record` : ""}`;
      b.title = "where it departs from its run";
      b.addEventListener("click", () => attempt(() => showDivergence(run.run_id)));
      li.appendChild(b);
      const open = document.createElement("button");
      open.type = "button";
      open.className = "small-btn";
      open.textContent = "open";
      open.setAttribute("aria-label", `open run ${run.short_id}`);
      open.addEventListener("click", () => attempt(() => openRun(run.run_id)));
      li.appendChild(open);
      list.appendChild(li);
      walk(made, depth + 1);
    }
  };
  walk(tree, 0);
  $("rec-made").hidden = !list.children.length;
}

async function showDivergence(runId) {
  const report = await get(`/records/runs/${encodeURIComponent(runId)}/divergence`);
  const box = $("rec-divergence");
  box.hidden = false;
  box.textContent = "";
  const first = report.first_divergence;
  const head = document.createElement("p");
  head.className = "divergence";
  head.textContent = first
    ? `${short(runId)} departs at its step ${first.step_b ?? "–"} (${first.kind}): ${first.detail}`
    : `${short(runId)} did not depart: the same units ran with the same states and outcomes.`;
  box.appendChild(head);
  const lines = [];
  if (report.edited.length) lines.push(`started from an edited state: ${report.edited.join(", ")}`);
  if (first && first.kind === "state" && first.paths.length) {
    lines.push(`${first.paths[0] || "(root)"}: ${JSON.stringify(report.old)} → ${JSON.stringify(report.new)}`);
  }
  const calls = report.calls;
  if (calls.recorded || calls.served || calls.live) {
    lines.push(`calls: ${calls.served} served from the record, ${calls.live} run live (the run made ${calls.recorded})`);
  }
  for (const text of lines) {
    const p = document.createElement("p");
    p.textContent = text;
    box.appendChild(p);
  }
}

async function travel(kind) {
  const step = record.steps[Number($("rec-slider").value) - 1];
  if (!record.runId) return;
  const note = $("rec-travel-note");
  try {
    const body = {};
    if (kind === "fork") {
      body.step = step ? step.step : 0;
      const edits = parseEdits($("rec-edits").value);
      if (edits) body.edits = edits;
    }
    const started = await post(`/records/runs/${encodeURIComponent(record.runId)}/${kind}`, body);
    const told = body.edits ? ` with ${Object.keys(body.edits).join(", ")} edited` : "";
    note.textContent = `${kind} ${short(started.run_id || "")} started${told}: its stops show in the Stops tab`;
    logLine(`started ${kind} ${short(started.run_id || "")} of run ${short(record.runId)}`);
  } catch (err) {
    note.textContent = err.message; // refused: which steps can be forked from, say
  }
}

$("rec-fork").addEventListener("click", () => travel("fork"));
$("rec-rerun").addEventListener("click", () => travel("rerun"));

async function showStep() {
  const index = Number($("rec-slider").value) - 1;
  const step = record.steps[index];
  if (!step) {
    $("rec-step-label").textContent = "(no steps)";
    return;
  }
  const ticket = ++record.token;
  $("rec-step-label").textContent = `${step.step} of ${record.steps.length}: ${step.node}`;
  for (const b of $("rec-steps").querySelectorAll("button")) b.classList.toggle("current", b.dataset.step === String(step.step));
  const data = await get(`/records/runs/${encodeURIComponent(record.runId)}/state?step=${step.step}`);
  if (ticket !== record.token) return; // the slider moved on meanwhile
  const body = $("rec-state").querySelector("tbody");
  body.textContent = "";
  for (const key of data.keys) {
    const tr = document.createElement("tr");
    tr.dataset.key = key.key;
    if (key.written_by && key.written_by.step === step.step) tr.className = "changed";
    for (const c of [key.key, key.preview, key.written_by ? `${key.written_by.node} (step ${key.written_by.step})` : ""]) {
      const td = document.createElement("td");
      td.textContent = c;
      tr.appendChild(td);
    }
    tr.tabIndex = 0;
    tr.title = "show the whole value";
    const show = () => attempt(() => showRecordedValue(step.step, key.key));
    tr.addEventListener("click", show);
    tr.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") show();
    });
    body.appendChild(tr);
  }
  $("rec-state").dataset.step = String(step.step);
  if (record.key && data.keys.some((k) => k.key === record.key)) await showRecordedValue(step.step, record.key);
  else $("rec-value").hidden = true;
}

async function showRecordedValue(stepNumber, key) {
  const path = joinPath("", key);
  const data = await get(`/records/runs/${encodeURIComponent(record.runId)}/state?step=${stepNumber}&path=${encodeURIComponent(path)}`);
  record.key = key;
  const box = $("rec-value");
  box.hidden = false;
  $("rec-value-title").textContent = `${path} after step ${stepNumber}`;
  renderTree($("rec-tree"), data.value, { editable: false, expand: new Set() });
}

$("rec-slider").addEventListener("input", () => attempt(showStep));
$("rec-filter").addEventListener("submit", (ev) => {
  ev.preventDefault();
  attempt(loadRuns);
});
$("rec-status").addEventListener("change", () => attempt(loadRuns));
$("rec-since").addEventListener("change", () => attempt(loadRuns));
$("rec-adapter").addEventListener("change", () => attempt(loadRuns));

$("rec-diff-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const a = $("rec-a").value;
  const b = $("rec-b").value;
  if (!a || !b || a === b) return;
  const diff = await attempt(() => get(`/records/diff?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`));
  if (!diff) return;
  const box = $("rec-diff");
  box.hidden = false;
  box.textContent = "";
  const head = document.createElement("p");
  head.className = "divergence";
  const first = diff.first_divergence;
  head.textContent = first
    ? `First divergence (${first.kind}): step ${first.step_a ?? "–"} ${first.node_a ?? ""} vs step ${first.step_b ?? "–"} ${first.node_b ?? ""}: ${first.detail}`
    : "No divergence: the runs took the same path with the same states.";
  box.appendChild(head);
  if (first && first.paths && first.paths.length) {
    const p = document.createElement("p");
    p.className = "small";
    p.textContent = `paths: ${first.paths.join(", ")}`;
    box.appendChild(p);
  }
  const table = document.createElement("table");
  table.className = "table";
  table.innerHTML = "<thead><tr><th>node</th><th>runs in A</th><th>runs in B</th><th>time A</th><th>time B</th></tr></thead>";
  const body = document.createElement("tbody");
  for (const n of diff.nodes || []) {
    const tr = document.createElement("tr");
    for (const c of [n.node, n.count_a, n.count_b, fmtSeconds(n.total_a), fmtSeconds(n.total_b)]) {
      const td = document.createElement("td");
      td.textContent = c === undefined || c === null ? "" : String(c);
      tr.appendChild(td);
    }
    body.appendChild(tr);
  }
  table.appendChild(body);
  box.appendChild(table);
  for (const w of diff.warnings || []) {
    const p = document.createElement("p");
    p.className = "muted small";
    p.textContent = w;
    box.appendChild(p);
  }
});

function fmtSeconds(s) {
  return typeof s === "number" ? `${(s * 1000).toFixed(1)} ms` : "";
}

// ------------------------------------------------------------------------------- tabs

function selectTab(name) {
  for (const tab of ["stops", "breakpoints", "record"]) {
    const on = tab === name;
    $(`tab-${tab}`).setAttribute("aria-selected", String(on));
    $(`pane-${tab}`).hidden = !on;
  }
  if (name === "record") attempt(loadRuns);
}

for (const tab of ["stops", "breakpoints", "record"]) $(`tab-${tab}`).addEventListener("click", () => selectTab(tab));

// ------------------------------------------------------------------------------- start

async function main() {
  if (!TOKEN) {
    showAlert("no token in the address: open the URL flowdbg printed (it ends with ?token=...)");
    return;
  }
  connect();
  await attempt(loadTarget);
  await attempt(loadCapabilities);
  await attempt(refreshBreakpoints);
  refreshStatus();
  syncStops();
  drawTimeline();
  document.body.dataset.ready = "true";
}

main();
