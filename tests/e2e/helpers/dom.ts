/**
 * The few browser types the tests use inside `page.evaluate` callbacks. That code runs in
 * Chromium; the test program is compiled without the DOM library (it is Node code), so the
 * callbacks cast `globalThis` to this shape instead.
 */
export interface DomElement {
  dataset: Record<string, string | undefined>;
  id: string;
  innerText: string;
  outerHTML: string;
  scrollWidth: number;
  textContent: string | null;
  getAttribute(name: string): string | null;
}

export interface DomCanvas {
  width: number;
  height: number;
  getContext(
    kind: '2d',
  ): { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } } | null;
}

export interface BrowserWindow {
  document: {
    activeElement: DomElement | null;
    documentElement: DomElement;
    querySelector(selector: string): DomElement | null;
    querySelectorAll(selector: string): ArrayLike<DomElement> & Iterable<DomElement>;
  };
  sessionStorage: { getItem(key: string): string | null; setItem(key: string, value: string): void };
  /** Set by a test; still there afterwards means the page was not reloaded. */
  stillTheSamePage?: boolean;
}
