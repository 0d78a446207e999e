/** Ends a simulator command whose arguments are wrong: the message on stderr, exit code 2. */
export function failArgs(message: string): never {
  console.error(message);
  Deno.exit(2);
}

/** The integer argument `--name`, at least `min`; anything else ends the command. */
export function intArg(name: string, text: string, min: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) {
    failArgs(`Cannot run the simulator: --${name} must be an integer of at least ${min}`);
  }
  return n;
}
