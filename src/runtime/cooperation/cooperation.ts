/**
 * Nothing in src/ reads this: it is left only because test/helpers/tier_harness.ts still names it in
 * an option that no test passes. It goes with that option; nothing can be switched through it.
 */
export type Cooperation = never;
