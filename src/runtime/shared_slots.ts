import { assert } from "./assert.ts";
import { directIoAlignBytes } from "./disk.ts";
import { Semaphore } from "./semaphore.ts";

/**
 * One slot lent to a request: its index (the worker finds it at `index × strideBytes`), its bytes,
 * and how to give it back.
 */
export interface Slot extends Disposable {
  readonly index: number;
  readonly bytes: Uint8Array;
}

/**
 * A few equal slots of one shared memory, lent in turn: what the loop and a file worker pass bytes
 * through without copying them into a message. The memory is a shared WebAssembly memory, whose
 * buffer starts on a page, and every slot starts on `directIoAlignBytes`, so a slot can be the
 * buffer of a direct (`O_DIRECT`) read or write. Turns are FIFO, with a bounded queue.
 */
export class SharedSlots {
  readonly memory: SharedArrayBuffer;
  readonly slotBytes: number;
  readonly slotsMax: number;
  readonly strideBytes: number;
  readonly name: string;
  readonly #slots: Uint8Array[];
  readonly #free: number[];
  readonly #turns: Semaphore;

  constructor(options: { slotBytes: number; slotsMax: number; waitersMax: number; name: string }) {
    assert(
      Number.isInteger(options.slotBytes) && options.slotBytes >= 1,
      "slotBytes must be a positive integer",
    );
    assert(
      Number.isInteger(options.slotsMax) && options.slotsMax >= 1,
      "slotsMax must be a positive integer",
    );
    this.slotBytes = options.slotBytes;
    this.slotsMax = options.slotsMax;
    this.name = options.name;
    this.strideBytes = Math.ceil(options.slotBytes / directIoAlignBytes) * directIoAlignBytes;
    const wasmPageBytes = 64 * 1024;
    const pages = Math.ceil((this.strideBytes * options.slotsMax) / wasmPageBytes);
    const memory: unknown = new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true }).buffer;
    assert(memory instanceof SharedArrayBuffer, "a shared WebAssembly memory's buffer is shared");
    this.memory = memory;
    this.#slots = Array.from(
      { length: options.slotsMax },
      (_, i) => new Uint8Array(memory, i * this.strideBytes, options.slotBytes),
    );
    this.#free = this.#slots.map((_, i) => i);
    this.#turns = new Semaphore({
      permits: options.slotsMax,
      waitersMax: options.waitersMax,
      name: options.name,
    });
  }

  /** Gauge: slots lent. */
  get inUse(): number {
    return this.#turns.inUse;
  }

  /** Whether a caller now would be refused (`acquire` would reject): no slot free, and no room to wait. */
  get queueFull(): boolean {
    return this.#turns.inUse >= this.slotsMax && this.#turns.waiting >= this.#turns.waitersMax;
  }

  /** Waits for a free slot, in turn; `using` gives it back at the end of the scope. */
  async acquire(): Promise<Slot> {
    const turn = await this.#turns.acquire();
    const index = this.#free.pop();
    assert(index !== undefined, `a ${this.name} is free when a turn is held`);
    let returned = false;
    return {
      index,
      bytes: this.#slots[index]!,
      [Symbol.dispose]: () => {
        assert(!returned, "Cannot give a slot back twice");
        returned = true;
        this.#free.push(index);
        turn.release();
      },
    };
  }
}
