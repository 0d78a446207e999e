import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";

/** What a group member process reported: its assignments in order, and every record it processed. */
export class GroupMember {
  readonly name: string;
  readonly child: ChildProcess;
  /** Each rebalance's assignment, in the order they came. */
  readonly assignments: number[][] = [];
  readonly records: { partition: number; offset: number; value: string | null }[] = [];
  #stderr = "";
  #exited = false;

  constructor(name: string, child: ChildProcess) {
    this.name = name;
    this.child = child;
    child.stderr!.on("data", (chunk) => (this.#stderr = (this.#stderr + chunk).slice(-16_384)));
    child.on("exit", () => (this.#exited = true));
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const event = JSON.parse(line);
      if (event.event === "joined") this.assignments.push(event.partitions);
      if (event.event === "record") this.records.push(event);
    });
  }

  /** The partitions of its last assignment; [] before any, or once it has exited. */
  get assigned(): number[] {
    return this.#exited ? [] : this.assignments.at(-1) ?? [];
  }

  get exited(): boolean {
    return this.#exited;
  }

  stderr(): string {
    return this.#stderr;
  }

  /** SIGTERM: it leaves the group; SIGKILL: it vanishes without a word. Resolves once it exited. */
  async stop(signal: NodeJS.Signals): Promise<void> {
    if (this.#exited) return;
    this.child.kill(signal);
    await once(this.child, "exit");
  }
}

/** Starts one kafkajs member (`kafkajs_group_member.ts`) under Deno. */
export function startGroupMember(
  name: string,
  broker: string,
  group: string,
  topic: string,
  sessionTimeoutMs: number,
): GroupMember {
  const script = new URL("./kafka/kafkajs_group_member.ts", import.meta.url).pathname;
  const child = spawn("deno", ["run", "-A", script, broker, group, topic, String(sessionTimeoutMs)], {
    cwd: new URL("../..", import.meta.url).pathname,
    stdio: ["ignore", "pipe", "pipe"],
  });
  return new GroupMember(name, child);
}
