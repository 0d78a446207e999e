import { assert } from "../assert.ts";

/**
 * Keys by the time each is next due (clock ms), earliest first: a binary min-heap with each key's
 * place indexed, so scheduling, moving and removing a key cost O(log n) and finding what is due
 * costs O(due × log n). A tick that serves what is due, not every key, is built on it. Holds each
 * key at most once, so it is bounded by the number of keys.
 */
export class DueHeap<K> {
  readonly #keys: K[] = [];
  readonly #dueMs: number[] = [];
  readonly #places = new Map<K, number>();

  get size(): number {
    return this.#keys.length;
  }

  /** When `key` is due, or undefined when it is not held. */
  dueAt(key: K): number | undefined {
    const place = this.#places.get(key);
    return place === undefined ? undefined : this.#dueMs[place];
  }

  /** Holds `key` due at `dueMs`, wherever it was before. `Infinity` removes it. */
  schedule(key: K, dueMs: number): void {
    assert(!Number.isNaN(dueMs), "Cannot schedule a key at NaN");
    if (dueMs === Infinity) return this.remove(key);
    const place = this.#places.get(key);
    if (place === undefined) {
      this.#keys.push(key);
      this.#dueMs.push(dueMs);
      this.#places.set(key, this.#keys.length - 1);
      this.#up(this.#keys.length - 1);
      return;
    }
    const before = this.#dueMs[place]!;
    this.#dueMs[place] = dueMs;
    if (dueMs < before) this.#up(place);
    else this.#down(place);
  }

  /** Makes `key` due no later than `dueMs`: an earlier time it holds stays. */
  bringForward(key: K, dueMs: number): void {
    const current = this.dueAt(key);
    if (current === undefined || dueMs < current) this.schedule(key, dueMs);
  }

  remove(key: K): void {
    const place = this.#places.get(key);
    if (place === undefined) return;
    const last = this.#keys.length - 1;
    this.#swap(place, last);
    this.#keys.pop();
    this.#dueMs.pop();
    this.#places.delete(key);
    if (place < last) {
      this.#up(place);
      this.#down(place);
    }
  }

  /** Removes and returns the keys due at or before `nowMs`, earliest first, at most `countMax`. */
  takeDue(nowMs: number, countMax: number): K[] {
    assert(countMax >= 1, "Cannot take fewer than one due key");
    const taken: K[] = [];
    while (taken.length < countMax && this.#keys.length > 0 && this.#dueMs[0]! <= nowMs) {
      const key = this.#keys[0]!;
      this.remove(key);
      taken.push(key);
    }
    return taken;
  }

  #up(place: number): void {
    let at = place;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (this.#dueMs[parent]! <= this.#dueMs[at]!) return;
      this.#swap(at, parent);
      at = parent;
    }
  }

  #down(place: number): void {
    let at = place;
    const n = this.#keys.length;
    for (;;) {
      const left = 2 * at + 1;
      const right = left + 1;
      let least = at;
      if (left < n && this.#dueMs[left]! < this.#dueMs[least]!) least = left;
      if (right < n && this.#dueMs[right]! < this.#dueMs[least]!) least = right;
      if (least === at) return;
      this.#swap(at, least);
      at = least;
    }
  }

  #swap(a: number, b: number): void {
    if (a === b) return;
    [this.#keys[a], this.#keys[b]] = [this.#keys[b]!, this.#keys[a]!];
    [this.#dueMs[a], this.#dueMs[b]] = [this.#dueMs[b]!, this.#dueMs[a]!];
    this.#places.set(this.#keys[a]!, a);
    this.#places.set(this.#keys[b]!, b);
  }
}

/**
 * Which keys a tick looks at: those touched since the last tick (something happened to them), and
 * those whose next look is due (`DueHeap`), at most `dueLooksPerTickMax` of the latter per tick.
 * Every key is held with a due time no later than `idleLookIntervalMs` after its last look, so a key
 * nothing happens to costs one look per interval, and a look that knows when time alone changes its
 * answer (an age limit passing) brings its next one forward to then. An idle tick thereby costs
 * `keys / idleLookIntervalMs` looks, not one per key per second.
 */
export class DueLooks<K> {
  readonly #idleLookIntervalMs: number;
  readonly #dueLooksPerTickMax: number;
  readonly #due = new DueHeap<K>();
  /** Keys touched since the last tick; only held keys, so bounded by them. */
  readonly #touched = new Set<K>();

  constructor(options: { idleLookIntervalMs: number; dueLooksPerTickMax: number }) {
    assert(options.idleLookIntervalMs > 0, "Cannot pace looks: the idle look interval must be positive");
    assert(options.dueLooksPerTickMax >= 1, "Cannot pace looks: a tick must take at least one due look");
    this.#idleLookIntervalMs = options.idleLookIntervalMs;
    this.#dueLooksPerTickMax = options.dueLooksPerTickMax;
  }

  get size(): number {
    return this.#due.size;
  }

  has(key: K): boolean {
    return this.#due.dueAt(key) !== undefined;
  }

  /** Holds `key`, looked at from the first tick at or after `nowMs`. */
  add(key: K, nowMs: number): void {
    this.#due.bringForward(key, nowMs);
  }

  remove(key: K): void {
    this.#due.remove(key);
    this.#touched.delete(key);
  }

  /** The next tick looks at `key`, if it is held. */
  touch(key: K): void {
    if (this.has(key)) this.#touched.add(key);
  }

  /** `key`'s next look is no later than `dueMs`. */
  bringForward(key: K, dueMs: number): void {
    if (this.has(key)) this.#due.bringForward(key, dueMs);
  }

  /**
   * The keys this tick looks at: the touched ones, then the due ones (earliest first, at most the
   * share). Each is held again due an idle interval from now; a look may bring that forward.
   */
  take(nowMs: number): K[] {
    const taken = [...this.#touched];
    for (const key of this.#due.takeDue(nowMs, this.#dueLooksPerTickMax)) {
      if (!this.#touched.has(key)) taken.push(key);
    }
    this.#touched.clear();
    const nextMs = nowMs + this.#idleLookIntervalMs;
    for (const key of taken) this.#due.schedule(key, nextMs);
    return taken;
  }
}
