/**
 * When to renew this node's etcd lease and whether it still holds, decided from the tick. A
 * keepalive is sent every `leaseTtlMs / 3`; the lease counts as held until `leaseTtlMs` after the
 * send time of the last keepalive etcd answered (it renewed the lease at that time or later, so
 * the lease lasts at least that long). A node whose lease no longer holds by this rule must stop
 * acting on it, whatever etcd thinks: that is the fence a paused process cannot see past.
 */
export interface LeaseKeeperState {
  leaseTtlMs: number;
  /** Send time of the last keepalive (or the grant) etcd answered. */
  confirmedSentAtMs: number;
  /** Send time of the keepalive in flight, or null. */
  inFlightSinceMs: number | null;
  /** The next keepalive goes at or after this time. */
  nextSendAtMs: number;
  /** etcd said the lease is gone: a new session must be opened. */
  lost: boolean;
}

export type LeaseKeeperEvent =
  | { kind: "tick" }
  | { kind: "answered"; sentAtMs: number }
  | { kind: "failed"; leaseGone: boolean };

export type LeaseKeeperEffect = { kind: "sendKeepAlive" } | { kind: "renewSession" };

export function initialLeaseKeeper(leaseTtlMs: number, grantedSentAtMs: number): LeaseKeeperState {
  return {
    leaseTtlMs,
    confirmedSentAtMs: grantedSentAtMs,
    inFlightSinceMs: null,
    nextSendAtMs: grantedSentAtMs + keepAliveIntervalMs(leaseTtlMs),
    lost: false,
  };
}

export function keepAliveIntervalMs(leaseTtlMs: number): number {
  return Math.floor(leaseTtlMs / 3);
}

/** Pause after a failed keepalive before the next: a tenth of the lease, so several fit in it. */
export function keepAliveRetryMs(leaseTtlMs: number): number {
  return Math.max(10, Math.floor(leaseTtlMs / 10));
}

export function leaseKeeperStep(
  state: LeaseKeeperState,
  event: LeaseKeeperEvent,
  nowMs: number,
): { state: LeaseKeeperState; effects: LeaseKeeperEffect[] } {
  switch (event.kind) {
    case "tick": {
      if (state.lost || state.inFlightSinceMs !== null) return { state, effects: [] };
      if (nowMs < state.nextSendAtMs) return { state, effects: [] };
      return { state: { ...state, inFlightSinceMs: nowMs }, effects: [{ kind: "sendKeepAlive" }] };
    }
    case "answered":
      return {
        state: {
          ...state,
          inFlightSinceMs: null,
          confirmedSentAtMs: Math.max(state.confirmedSentAtMs, event.sentAtMs),
          nextSendAtMs: event.sentAtMs + keepAliveIntervalMs(state.leaseTtlMs),
        },
        effects: [],
      };
    case "failed": {
      if (event.leaseGone) {
        return {
          state: { ...state, inFlightSinceMs: null, lost: true },
          effects: [{ kind: "renewSession" }],
        };
      }
      // Retried soon; the lease holds until its time is up.
      const nextSendAtMs = nowMs + keepAliveRetryMs(state.leaseTtlMs);
      return { state: { ...state, inFlightSinceMs: null, nextSendAtMs }, effects: [] };
    }
  }
}

/** Whether the lease still holds at `nowMs` by this node's own clock. */
export function leaseHeld(state: LeaseKeeperState, nowMs: number): boolean {
  return !state.lost && nowMs - state.confirmedSentAtMs < state.leaseTtlMs;
}

/** Milliseconds since the send time of the last keepalive etcd answered. */
export function sinceConfirmedMs(state: LeaseKeeperState, nowMs: number): number {
  return nowMs - state.confirmedSentAtMs;
}
