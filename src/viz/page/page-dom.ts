/*
 * The page's DOM helpers: elements built from a tag, attributes and children (HTML and SVG), lookups by id
 * and by data-testid, and text set only when it changed.
 */

const SVG = 'http://www.w3.org/2000/svg';

export type Attrs = Record<string, string | number | boolean | undefined | null>;
export type Child = Node | string | null | undefined | false;

export function h(tag: string, attrs: Attrs = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

export function s(tag: string, attrs: Attrs = {}, ...children: Child[]): SVGElement {
  const el = document.createElementNS(SVG, tag);
  setAttrs(el, attrs);
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

function setAttrs(el: Element, attrs: Attrs): void {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    el.setAttribute(k, v === true ? '' : String(v));
  }
}

export function byId(id: string): HTMLElement {
  return document.getElementById(id)!;
}

export function testid(id: string): HTMLElement {
  return document.querySelector(`[data-testid="${CSS.escape(id)}"]`)!;
}

/** Sets text only when it changed (no layout work for the same text). */
export function setText(el: Element, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}
