import { setImmediate } from "node:timers";
import { PieceGate } from "../../src/runtime/cooperation/piece_gate.ts";

/** A piece gate that notes the loop iteration in which each turn's holder runs. */
export class RecordingGate extends PieceGate {
  readonly turnsAt: number[] = [];
  #iteration = 0;
  #running = true;

  constructor() {
    super();
    // An immediate queued from the check phase runs in the next iteration: one count per iteration.
    const count = () => {
      this.#iteration++;
      if (this.#running) setImmediate(count);
    };
    setImmediate(count);
  }

  override async turn(): Promise<void> {
    await super.turn();
    this.turnsAt.push(this.#iteration);
  }

  stop(): void {
    this.#running = false;
  }
}
