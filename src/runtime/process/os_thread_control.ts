import { getPriority, setPriority } from "node:os";
import type { ThreadControl } from "./thread_priority.ts";

/**
 * The real `ThreadControl`: `os.getPriority` and `os.setPriority` with pid 0, which on Linux read
 * and set the calling thread's nice value alone, under Deno and Node (elsewhere, the process's).
 */
export class OsThreadControl implements ThreadControl {
  ownNice(): number {
    return getPriority(0);
  }

  setOwnNice(nice: number): void {
    setPriority(0, nice);
  }
}
