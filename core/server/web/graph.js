// The graph view: a target's description (GET /target) laid out by dagre and drawn as SVG.
//
// Node ids are the unit's path and name joined by "/" ("sub/inner" for a node of the
// subgraph "sub"), as events and stops give them (location.path + node). A node that runs a
// subgraph is drawn as a box holding the nested graph; collapsed, it is one node again. The
// tools a node lists (an agent's) hang from it as tool nodes ("refunds/refund": a tool call's
// path is its agent); clicking one sets a tool breakpoint.

const SVG = "http://www.w3.org/2000/svg";
const START = "__start__";
const END = "__end__";
const SHOWN = { [START]: "START", [END]: "END" };

function el(name, attrs = {}, parent = null) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (parent) parent.appendChild(node);
  return node;
}

function textWidth(text) {
  // an estimate good enough for the layout: the label's font is small and monospace-ish
  return Math.max(60, 7.4 * text.length + 28);
}

export function nodeId(path, node) {
  return [...(path || []), node].join("/");
}

/** Compile a glob (the breakpoint's pattern) to a RegExp matching whole names. */
export function globRegExp(glob) {
  let out = "";
  for (const ch of glob) {
    if (ch === "*") out += ".*";
    else if (ch === "?") out += ".";
    else out += ch.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${out}$`);
}

export class GraphView {
  constructor(svg, dagre, { onToggle, onToggleTool }) {
    this.svg = svg;
    this.dagre = dagre;
    this.onToggle = onToggle;
    this.onToggleTool = onToggleTool;
    this.description = null;
    this.collapsed = new Set();
    this.states = new Map(); // id -> running | held | done | failed
    this.hits = new Map(); // id -> count
    this.marks = new Map(); // id -> {before, after}
    this.nodes = new Map(); // id -> <g>
    this.clusters = new Map(); // id of a node running a subgraph, drawn as a box -> <g>
    this.names = []; // every unit id that can take a breakpoint
    this.tools = new Set(); // ids of the tool nodes among this.nodes
  }

  setDescription(description) {
    this.description = description;
    this.render();
  }

  /** Every node's id and name, for the breakpoint form. */
  unitIds() {
    return this.names.slice();
  }

  /** The id of the drawn node that shows unit ``path``/``node``: itself, or the closest
   * enclosing node drawn (a call inside a node, a node of a collapsed subgraph). */
  shown(path, node) {
    const parts = [...(path || []), node];
    while (parts.length) {
      const id = parts.join("/");
      if (this.has(id)) return id;
      parts.pop();
    }
    return null;
  }

  has(id) {
    return this.nodes.has(id) || this.clusters.has(id);
  }

  setState(id, state) {
    if (state) this.states.set(id, state);
    else this.states.delete(id);
    this.paint(id);
  }

  state(id) {
    return this.states.get(id);
  }

  addHit(id) {
    this.hits.set(id, (this.hits.get(id) || 0) + 1);
    this.paint(id);
  }

  reset() {
    this.states.clear();
    this.hits.clear();
    for (const id of [...this.nodes.keys(), ...this.clusters.keys()]) this.paint(id);
  }

  setBreakpoints(breakpoints) {
    this.marks.clear();
    for (const bp of breakpoints) {
      if (!bp.enabled || (bp.type !== "node" && bp.type !== "tool")) continue;
      const re = globRegExp(bp.pattern);
      for (const id of this.nodes.keys()) {
        // a node breakpoint marks nodes, a tool breakpoint the tool nodes
        if (this.tools.has(id) !== (bp.type === "tool")) continue;
        const name = id.split("/").pop();
        if (!re.test(name)) continue;
        const mark = this.marks.get(id) || { before: false, after: false, conditional: false };
        for (const position of bp.positions || []) if (position in mark) mark[position] = true;
        mark.conditional = mark.conditional || Boolean(bp.condition || bp.hit_condition);
        this.marks.set(id, mark);
      }
    }
    for (const id of this.nodes.keys()) this.paint(id);
  }

  paint(id) {
    const box = this.clusters.get(id);
    if (box) {
      const state = this.states.get(id) || "idle";
      box.setAttribute("class", `cluster state-${state}`);
      box.dataset.state = state;
      return;
    }
    const g = this.nodes.get(id);
    if (!g) return;
    const state = this.states.get(id) || "idle";
    g.setAttribute("class", `node state-${state}`);
    g.dataset.state = state;
    const hits = this.hits.get(id) || 0;
    const badge = g.querySelector(".hits");
    if (badge) {
      badge.textContent = hits ? `×${hits}` : "";
    }
    const mark = this.marks.get(id) || { before: false, after: false };
    g.querySelector(".bp-before")?.classList.toggle("on", mark.before);
    g.querySelector(".bp-after")?.classList.toggle("on", mark.after);
    // a breakpoint with a condition is drawn as a ring
    g.querySelector(".bp-before")?.classList.toggle("cond", Boolean(mark.conditional));
    g.querySelector(".bp-after")?.classList.toggle("cond", Boolean(mark.conditional));
    g.dataset.breakBefore = String(mark.before);
    g.dataset.breakAfter = String(mark.after);
    const where = [mark.before && "before", mark.after && "after"].filter(Boolean).join(" and ");
    const tool = this.tools.has(id);
    const label = `${tool ? "tool " : ""}${id}: ${state}${hits ? `, ran ${hits} times` : ""}${where ? `, breakpoint ${tool ? "on its calls" : where}` : ""}`;
    g.setAttribute("aria-label", label);
    const title = g.querySelector("title");
    if (title) title.textContent = `${label}\n${tool ? "click: break on its calls" : "click: break before · shift+click: break after"}`;
  }

  // ------------------------------------------------------------------- building the layout

  build(description, prefix, graph, parent, ids) {
    const edges = (description.edges || []).filter((e) => e && typeof e === "object");
    const conditional = (description.conditional_edges || []).filter((e) => e && typeof e === "object");
    const q = (name) => (prefix ? `${prefix}/${name}` : name);
    const ensure = (name, kind = "node") => {
      const id = q(name);
      if (!graph.hasNode(id)) {
        const label = SHOWN[name] || name;
        graph.setNode(id, { label, kind: SHOWN[name] ? "terminal" : kind, width: textWidth(label), height: 36 });
        if (parent) graph.setParent(id, parent);
      }
      return id;
    };
    const entries = { into: new Map(), out: new Map() };
    const hasStart = edges.some((e) => e.source === START) || conditional.some((c) => c.source === START);
    const entry = (description.entry || []).map(String);
    if (entry.length && !hasStart) ensure(START);
    for (const node of description.nodes || []) {
      const name = typeof node === "object" && node ? String(node.name) : String(node);
      if (SHOWN[name]) continue;
      const sub = node && typeof node === "object" ? node.subgraph : null;
      const id = q(name);
      this.names.push(id);
      if (sub && typeof sub === "object" && !this.collapsed.has(id)) {
        // a box holding the nested graph; edges to and from the node go to its START and END
        graph.setNode(id, { label: `${name}: ${sub.name || "subgraph"}`, kind: "cluster", clusterLabelPos: "top" });
        if (parent) graph.setParent(id, parent);
        this.build(sub, id, graph, id, ids);
        entries.into.set(id, `${id}/${START}`);
        entries.out.set(id, `${id}/${END}`);
        for (const t of [START, END]) {
          const tid = `${id}/${t}`;
          if (!graph.hasNode(tid)) {
            graph.setNode(tid, { label: SHOWN[t], kind: "terminal", width: textWidth(SHOWN[t]), height: 36 });
            graph.setParent(tid, id);
          }
        }
      } else {
        ensure(name, sub ? "collapsed" : "node");
      }
      for (const tool of (node && typeof node === "object" && Array.isArray(node.tools) ? node.tools : [])) {
        const toolName = tool && typeof tool === "object" ? String(tool.name) : String(tool);
        const tid = `${id}/${toolName}`;
        if (graph.hasNode(tid)) continue;
        graph.setNode(tid, { label: toolName, kind: "tool", tool: toolName, width: textWidth(`⚙ ${toolName}`), height: 32 });
        if (parent) graph.setParent(tid, parent);
        this.names.push(tid);
        graph.setEdge(id, tid, { style: "tool", label: "", width: 0, height: 0, labelpos: "c" }, `${id}->${tid}`);
      }
    }
    if (entry.length && !hasStart) for (const name of entry) this.edge(graph, ensure(START), ensure(name), "solid", "", entries);
    for (const e of edges) this.edge(graph, ensure(String(e.source)), ensure(String(e.target)), "solid", "", entries);
    for (const c of conditional) {
      const source = ensure(String(c.source));
      // targets: a list of names, or a map from the router's answers to names
      if (c.targets && typeof c.targets === "object" && !Array.isArray(c.targets)) {
        for (const t of new Set(Object.values(c.targets))) this.edge(graph, source, ensure(String(t)), "dashed", c.router || "", entries);
        continue;
      }
      if (!Array.isArray(c.targets)) {
        const any = ensure(`${c.source}→?`, "any");
        graph.node(any).label = "any node";
        this.edge(graph, source, any, "dashed", c.router || "", entries);
        continue;
      }
      for (const t of c.targets) this.edge(graph, source, ensure(String(t)), "dashed", c.router || "", entries);
    }
  }

  edge(graph, source, target, style, label, entries) {
    const from = entries.out.get(source) || source;
    const to = entries.into.get(target) || target;
    const name = `${from}->${to}`;
    const existing = graph.edge(from, to, name);
    if (existing) return;
    graph.setEdge(from, to, { style, label, width: label ? textWidth(label) - 20 : 0, height: label ? 14 : 0, labelpos: "c" }, name);
  }

  render() {
    const svg = this.svg;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    this.nodes.clear();
    this.clusters.clear();
    this.tools.clear();
    this.names = [];
    const description = this.description;
    if (!description || !Array.isArray(description.nodes) || !description.nodes.length) {
      const t = el("text", { x: 20, y: 30, class: "empty" }, svg);
      t.textContent = "this target gives no graph description";
      svg.setAttribute("viewBox", "0 0 400 60");
      return;
    }
    // top to bottom, unless left to right shows the graph larger in the panel
    const box = svg.parentElement ? svg.parentElement.getBoundingClientRect() : { width: 0, height: 0 };
    let graph = this.layout(description, "TB");
    if (box.width > 0 && box.height > 0) {
      const scale = (g) => Math.min(box.width / g.graph().width, box.height / g.graph().height);
      const wide = this.layout(description, "LR");
      if (scale(wide) > scale(graph) * 1.15) graph = wide;
    }

    const defs = el("defs", {}, svg);
    const marker = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, defs);
    el("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow" }, marker);

    // a box's fill under the edges, its outline and title over them: an edge entering the box
    // passes under its title
    const layers = {
      backs: el("g", { class: "cluster-backs" }, svg),
      edges: el("g", { class: "edges" }, svg),
      clusters: el("g", { class: "clusters" }, svg),
      nodes: el("g", { class: "nodes" }, svg),
    };
    for (const id of graph.nodes()) {
      const n = graph.node(id);
      if (n.kind !== "cluster") continue;
      const box = { x: n.x - n.width / 2, y: n.y - n.height / 2, width: n.width, height: n.height, rx: 8 };
      el("rect", { ...box, class: "cluster-back" }, layers.backs);
      const g = el("g", { class: "cluster", "data-cluster": id }, layers.clusters);
      this.clusters.set(id, g);
      el("rect", { ...box, class: "outline" }, g);
      this.clusterHead(g, id, n);
    }
    for (const e of graph.edges()) {
      const data = graph.edge(e);
      const points = data.points || [];
      if (!points.length) continue;
      let d = `M${points[0].x},${points[0].y}`;
      for (let i = 1; i < points.length; i++) d += ` L${points[i].x},${points[i].y}`;
      // a tool hangs from its agent: the agent calls it and gets its result, no arrow
      const attrs = { d, class: `edge ${data.style}`, "data-edge": `${e.v}->${e.w}` };
      if (data.style !== "tool") attrs["marker-end"] = "url(#arrow)";
      el("path", attrs, layers.edges);
      if (data.label) {
        const t = el("text", { x: data.x, y: data.y + 4, class: "edge-label", "text-anchor": "middle" }, layers.edges);
        t.textContent = data.label;
      }
    }
    for (const id of graph.nodes()) {
      const n = graph.node(id);
      if (n.kind === "cluster") continue;
      this.drawNode(layers.nodes, id, n);
    }
    const g = graph.graph();
    const width = Math.max(g.width || 0, 200);
    const height = Math.max(g.height || 0, 100);
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    // drawn at its size, shrunk (never enlarged) to fit the panel: see #graph in app.css
    svg.setAttribute("width", String(width));
    svg.setAttribute("height", String(height));
    for (const id of [...this.nodes.keys(), ...this.clusters.keys()]) this.paint(id);
  }

  layout(description, rankdir) {
    this.names = [];
    const graph = new this.dagre.graphlib.Graph({ multigraph: true, compound: true });
    graph.setGraph({ rankdir, nodesep: 30, ranksep: 44, edgesep: 14, marginx: 16, marginy: 16 });
    graph.setDefaultEdgeLabel(() => ({}));
    this.build(description, "", graph, null, null);
    this.dagre.layout(graph);
    return graph;
  }

  clusterHead(g, id, n) {
    const x = n.x - n.width / 2 + 8;
    const y = n.y - n.height / 2 + 16;
    const toggle = el("g", { class: "cluster-toggle", tabindex: 0, role: "button", "aria-label": `collapse ${id}`, "data-collapse": id }, g);
    el("rect", { x: x - 2, y: y - 11, width: 16, height: 16, rx: 3 }, toggle);
    const sign = el("text", { x: x + 6, y: y + 1, "text-anchor": "middle" }, toggle);
    sign.textContent = "−";
    const label = el("text", { x: x + 22, y: y + 1, class: "cluster-label" }, g);
    label.textContent = n.label;
    const flip = () => {
      this.collapsed.add(id);
      this.render();
      this.svg.querySelector(`[data-collapse="${CSS.escape(id)}"], [data-expand="${CSS.escape(id)}"]`)?.focus();
    };
    toggle.addEventListener("click", flip);
    toggle.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") {
        ev.preventDefault();
        flip();
      }
    });
  }

  drawNode(layer, id, n) {
    const terminal = n.kind === "terminal" || n.kind === "any";
    const g = el("g", { "data-node": id, transform: `translate(${n.x - n.width / 2},${n.y - n.height / 2})` }, layer);
    el("title", {}, g);
    el("rect", { width: n.width, height: n.height, rx: terminal ? 18 : n.kind === "tool" ? 14 : 6, class: "body" }, g);
    const t = el("text", { x: n.width / 2, y: n.height / 2 + 4, "text-anchor": "middle", class: "label" }, g);
    t.textContent = n.kind === "collapsed" ? `▸ ${n.label}` : n.kind === "tool" ? `⚙ ${n.label}` : n.label;
    if (terminal) {
      g.setAttribute("class", "node terminal");
      return;
    }
    el("circle", { cx: 0, cy: n.height / 2, r: 5, class: "bp-before" }, g);
    if (n.kind !== "tool") el("circle", { cx: n.width, cy: n.height / 2, r: 5, class: "bp-after" }, g);
    // the count of runs sits inside the node's corner: above it, it would run into a box's
    // title or a neighbour
    const hits = el("text", { x: n.width - 5, y: 10, "text-anchor": "end", class: "hits" }, g);
    hits.textContent = "";
    g.setAttribute("tabindex", "0");
    g.setAttribute("role", "button");
    this.nodes.set(id, g);
    if (n.kind === "tool") {
      this.tools.add(id);
      g.dataset.tool = n.tool;
      const toggle = () => this.onToggleTool(n.tool);
      g.addEventListener("click", toggle);
      g.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" || ev.key === " ") {
          ev.preventDefault();
          toggle();
        }
      });
      return;
    }
    g.addEventListener("click", (ev) => {
      if (n.kind === "collapsed" && ev.altKey) {
        this.collapsed.delete(id);
        this.render();
        return;
      }
      this.onToggle(id, ev.shiftKey || ev.altKey ? "after" : "before");
    });
    g.addEventListener("dblclick", (ev) => {
      if (n.kind !== "collapsed") return;
      ev.preventDefault();
      this.collapsed.delete(id);
      this.render();
    });
    g.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") {
        ev.preventDefault();
        this.onToggle(id, ev.shiftKey ? "after" : "before");
      } else if (ev.key === "+" && n.kind === "collapsed") {
        this.collapsed.delete(id);
        this.render();
      }
    });
    if (n.kind === "collapsed") {
      // an explicit control to open the box again, reachable from the keyboard too
      const expand = el("g", { class: "cluster-toggle", tabindex: 0, role: "button", "aria-label": `expand ${id}`, "data-expand": id }, layer);
      const x = n.x - n.width / 2 - 22;
      const y = n.y - 8;
      el("rect", { x, y, width: 16, height: 16, rx: 3 }, expand);
      const sign = el("text", { x: x + 8, y: y + 12, "text-anchor": "middle" }, expand);
      sign.textContent = "+";
      const open = () => {
        this.collapsed.delete(id);
        this.render();
      };
      expand.addEventListener("click", open);
      expand.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" || ev.key === " ") {
          ev.preventDefault();
          open();
        }
      });
    }
  }
}
