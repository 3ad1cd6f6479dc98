// Small DOM helpers: elements are built with text nodes (never HTML strings), so memory
// content in any language shows as written and can never run as markup.
import { t } from "./strings.js";

export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(element.dataset, value);
    else if (value === true) element.setAttribute(name, "");
    else element.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

export function when(value) {
  if (!value) return "—";
  return String(value).replace("T", " ").replace(/(\.\d+)?(Z|\+00:00)$/, "Z");
}

export function short(text, size = 160) {
  const value = String(text ?? "");
  return value.length > size ? `${value.slice(0, size - 1)}…` : value;
}

export function field(id, label, control, help) {
  const helpId = help ? `${id}-help` : undefined;
  control.id = id;
  if (helpId) control.setAttribute("aria-describedby", helpId);
  return h(
    "div",
    { class: "field" },
    h("label", { for: id }, label),
    control,
    help ? h("small", { id: helpId }, help) : null,
  );
}

export function select(name, options, value) {
  return h(
    "select",
    { name },
    options.map(([optionValue, label]) =>
      h("option", { value: optionValue, selected: optionValue === (value || "") }, label),
    ),
  );
}

// A modal confirmation (a <dialog>): resolves true when the user confirms.
export function confirmAction(message) {
  return new Promise((resolve) => {
    const dialog = h(
      "dialog",
      { class: "confirm", "aria-labelledby": "confirm-text" },
      h("p", { id: "confirm-text" }, message),
      h(
        "div",
        { class: "actions" },
        h("button", { type: "button", class: "danger", id: "confirm-ok", onclick: () => close(true) }, t("confirm.ok")),
        h("button", { type: "button", id: "confirm-cancel", onclick: () => close(false) }, t("confirm.cancel")),
      ),
    );
    function close(answer) {
      dialog.close();
      dialog.remove();
      resolve(answer);
    }
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      close(false);
    });
    document.body.append(dialog);
    dialog.showModal();
    dialog.querySelector("#confirm-cancel").focus();
  });
}

// Text with the given words marked (<mark>), as text nodes.
export function highlighted(text, words) {
  const value = String(text ?? "");
  const marks = [];
  const lower = value.toLowerCase();
  for (const word of words) {
    let at = lower.indexOf(word);
    while (word && at !== -1) {
      marks.push([at, at + word.length]);
      at = lower.indexOf(word, at + word.length);
    }
  }
  marks.sort((a, b) => a[0] - b[0]);
  const merged = [];
  for (const [start, end] of marks) {
    const last = merged[merged.length - 1];
    if (last && start <= last[1]) last[1] = Math.max(last[1], end);
    else merged.push([start, end]);
  }
  const parts = [];
  let position = 0;
  for (const [start, end] of merged) {
    parts.push(value.slice(position, start), h("mark", {}, value.slice(start, end)));
    position = end;
  }
  parts.push(value.slice(position));
  return parts;
}
