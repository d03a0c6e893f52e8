// A value as an expandable tree. Children are built only when their parent is expanded, long
// strings are cut, and long lists are shown a page at a time, so a large state never blocks
// the page. A row's path is the flowdbg path of its value (messages[-1].content,
// state['user id']): what GET /stops/{id}/value reads and POST /stops/{id}/set edits.

const PAGE = 100;
const CUT = 160;

export function joinPath(parent, key) {
  if (typeof key === "number") return `${parent}[${key}]`;
  if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) return parent ? `${parent}.${key}` : key;
  return `${parent}[${JSON.stringify(key)}]`;
}

function kindOf(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "list";
  return typeof value === "object" ? "dict" : typeof value;
}

export function preview(value, limit = CUT) {
  const kind = kindOf(value);
  if (kind === "list") return `[${value.length} item${value.length === 1 ? "" : "s"}]`;
  if (kind === "dict") {
    const keys = Object.keys(value);
    const shown = keys.slice(0, 4).join(", ");
    return `{${shown}${keys.length > 4 ? `, … ${keys.length} keys` : ""}}`;
  }
  const text = JSON.stringify(value);
  if (text === undefined) return String(value);
  return text.length > limit ? `${text.slice(0, limit)}… (${text.length} chars)` : text;
}

/**
 * Render ``value`` into ``list`` (a <ul role=tree>).
 * options: editable (bool), onEdit(path, text) -> Promise (throws with the refusal),
 * changed (Set of paths the unit changed), expand (paths to open at once), prefix (the
 * view: written before paths shown to the user).
 */
export function renderTree(list, value, options) {
  list.textContent = "";
  const kind = kindOf(value);
  if (kind === "dict" || kind === "list") {
    addChildren(list, value, "", options);
  } else {
    addRow(list, "(value)", value, "", options, true);
  }
}

function addChildren(list, value, path, options, from = 0) {
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  const end = Math.min(entries.length, from + PAGE);
  for (let i = from; i < end; i++) {
    const [key, child] = entries[i];
    addRow(list, key, child, joinPath(path, key), options);
  }
  if (end < entries.length) {
    const li = document.createElement("li");
    const more = document.createElement("button");
    more.type = "button";
    more.className = "more";
    more.textContent = `show ${Math.min(PAGE, entries.length - end)} more of ${entries.length - end}`;
    more.addEventListener("click", () => {
      li.remove();
      addChildren(list, value, path, options, end);
    });
    li.appendChild(more);
    list.appendChild(li);
  }
}

function isChanged(path, changed) {
  if (!changed || !path) return false;
  for (const p of changed) {
    if (p === path || p.startsWith(`${path}.`) || p.startsWith(`${path}[`)) return true;
  }
  return false;
}

function addRow(list, key, value, path, options, root = false) {
  const li = document.createElement("li");
  li.setAttribute("role", "treeitem");
  li.dataset.path = path;
  const row = document.createElement("div");
  row.className = "row";
  if (isChanged(path, options.changed)) row.classList.add("changed");
  li.appendChild(row);
  const kind = kindOf(value);
  const nested = (kind === "dict" || kind === "list") && (Array.isArray(value) ? value.length : Object.keys(value).length) > 0;
  if (nested) {
    const toggle = document.createElement("button");
    toggle.type = "button";
    toggle.className = "twisty";
    toggle.textContent = "▸";
    toggle.setAttribute("aria-label", `expand ${path || key}`);
    li.setAttribute("aria-expanded", "false");
    let children = null;
    const flip = () => {
      const open = li.getAttribute("aria-expanded") !== "true";
      li.setAttribute("aria-expanded", String(open));
      toggle.textContent = open ? "▾" : "▸";
      toggle.setAttribute("aria-label", `${open ? "collapse" : "expand"} ${path || key}`);
      if (open && !children) {
        children = document.createElement("ul");
        children.setAttribute("role", "group");
        addChildren(children, value, path, options);
        li.appendChild(children);
      }
      if (children) children.hidden = !open;
    };
    toggle.addEventListener("click", flip);
    row.appendChild(toggle);
    if (options.expand && options.expand.has(path)) queueMicrotask(flip);
  } else {
    const pad = document.createElement("span");
    pad.className = "twisty-pad";
    row.appendChild(pad);
  }
  const name = document.createElement("span");
  name.className = "key";
  name.textContent = root ? key : typeof key === "number" ? `[${key}]` : String(key);
  row.appendChild(name);
  const shown = document.createElement("span");
  shown.className = `val t-${kind}`;
  shown.textContent = preview(value);
  row.appendChild(shown);
  const text = kind === "string" ? JSON.stringify(value) : null;
  if (text && text.length > CUT) {
    const all = document.createElement("button");
    all.type = "button";
    all.className = "small-btn";
    all.textContent = "show all";
    all.addEventListener("click", async () => {
      const full = options.fetch ? await options.fetch(path) : value;
      shown.textContent = JSON.stringify(full);
      shown.classList.add("full");
      all.remove();
    });
    row.appendChild(all);
  }
  if (options.editable && path) {
    const edit = document.createElement("button");
    edit.type = "button";
    edit.className = "small-btn edit";
    edit.textContent = "edit";
    edit.setAttribute("aria-label", `edit ${path}`);
    edit.addEventListener("click", () => startEdit(row, shown, edit, path, value, options));
    row.appendChild(edit);
  }
  list.appendChild(li);
}

function startEdit(row, shown, edit, path, value, options) {
  const input = document.createElement("input");
  input.type = "text";
  input.className = "edit-input";
  input.spellcheck = false;
  input.setAttribute("aria-label", `new value of ${path} (JSON; plain text is taken as a string)`);
  input.value = JSON.stringify(value);
  shown.hidden = true;
  edit.hidden = true;
  row.insertBefore(input, edit);
  input.focus();
  input.select();
  const close = () => {
    input.remove();
    shown.hidden = false;
    edit.hidden = false;
  };
  input.addEventListener("keydown", async (ev) => {
    if (ev.key === "Escape") {
      ev.preventDefault();
      close();
      edit.focus();
    } else if (ev.key === "Enter") {
      ev.preventDefault();
      input.disabled = true;
      try {
        await options.onEdit(path, input.value);
      } catch {
        // the refusal is shown by onEdit; let the user fix the value
        input.disabled = false;
        input.focus();
      }
    }
  });
}
