import type { AuthContext } from "../lib/actor.ts";

/** A read's answer as every request of its round sends it. */
export interface SharedAnswer {
  json: string;
  etag: string;
  /** The route is public (its answer's Cache-Control and Vary depend on it). */
  isPublic: boolean;
  /** An anonymous read the public read cache could keep (its requests say `X-Cache: miss`). */
  cacheable: boolean;
}

/**
 * A computation's result: the shared answer (null: not shared, e.g. not a 200), and what the request
 * that ran it sends otherwise (the route's status and body, or the handler's bytes).
 */
export interface Computed {
  answer: SharedAnswer | null;
  result: unknown;
}

/** What the requests of a key share: the computation, and the credential it was computed for. */
interface Round {
  /** Computes the answer again, for the requests that waited. */
  compute: () => Promise<Computed>;
  /** The credential the route checked and computes with (null: anonymous). */
  auth: AuthContext | null;
  /** The requests that arrived while a computation ran: the next computation answers them. */
  next: { promise: Promise<SharedAnswer | null>; resolve: (a: SharedAnswer | null) => void; reject: (e: unknown) => void } | null;
}

/**
 * Identical reads in flight are computed once per round (request collapsing): a GET that arrives
 * while the same read (the same `Authorization` header and URL) is being computed waits for the
 * next computation, which starts as soon as the running one ends and answers every request that
 * waited for it. No answer is older than its request: each computation starts after every request
 * it answers arrived, so a client reads its own completed writes, and nothing is kept once a key's
 * requests are answered (a lone request is computed at once, as before). A waiting request costs
 * no database statement; N identical requests in flight cost about two computations, not N.
 *
 * The route computes (`lead`), after it authenticated, rate limited and authorized the request;
 * a request that comes later may `join` from the router's first middleware once its own credential
 * resolves to the same context and its rate limit allows it (see ApiRouter.joinSharedReads). A failed
 * computation fails only the request that ran it: the others compute their own answer.
 */
export class SharedReads {
  private readonly rounds = new Map<string, Round>();
  /** Computations run and requests that waited for one, since the start (logs and tests). */
  readonly stats = { computed: 0, joined: 0 };

  static keyOf(authorization: string | undefined, url: string): string {
    return `${authorization ?? ""}\n${url}`;
  }

  /**
   * The answer of `key` for a request the route authorized: computed now when no computation of
   * the key runs ("ran": the handler's result too), else the next one's ("shared"). Null: the next
   * one's is not for this request (another credential context, not shared, or failed): compute
   * your own. Rejects with the error of a computation this request ran.
   */
  async lead(key: string, round: Omit<Round, "next">): Promise<{ kind: "ran"; computed: Computed } | { kind: "shared"; answer: SharedAnswer } | null> {
    const running = this.rounds.get(key);
    if (running) {
      if (!sameCredential(running.auth, round.auth)) return null;
      const answer = await this.wait(running).catch(() => null);
      return answer ? { kind: "shared", answer } : null;
    }
    const state: Round = { ...round, next: null };
    this.rounds.set(key, state);
    try {
      this.stats.computed++;
      return { kind: "ran", computed: await state.compute() };
    } finally {
      this.advance(key, state);
    }
  }

  /** The round of `key` if one is being computed now (a later request may join it). */
  running(key: string): Pick<Round, "auth"> | undefined {
    return this.rounds.get(key);
  }

  /**
   * Waits for the next computation of `key` (after the checks `running` allows); undefined when
   * none runs any more. Resolves to null when the request should go through the route after all
   * (the computation failed, or its answer is not shared).
   */
  join(key: string): Promise<SharedAnswer | null> | undefined {
    const round = this.rounds.get(key);
    return round ? this.wait(round).catch(() => null) : undefined;
  }

  private wait(round: Round): Promise<SharedAnswer | null> {
    this.stats.joined++;
    if (!round.next) {
      let resolve!: (a: SharedAnswer | null) => void;
      let reject!: (e: unknown) => void;
      const promise = new Promise<SharedAnswer | null>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      round.next = { promise, resolve, reject };
    }
    return round.next.promise;
  }

  /** After a computation: the next one for the requests that waited, or the key is done. */
  private advance(key: string, round: Round): void {
    const waiting = round.next;
    if (!waiting) {
      this.rounds.delete(key);
      return;
    }
    round.next = null;
    this.stats.computed++;
    round
      .compute()
      .then((computed) => waiting.resolve(computed.answer), waiting.reject)
      .finally(() => this.advance(key, round));
  }
}

/** Whether two resolved credentials are the same context (a request may share what the other's computed). */
export function sameCredential(a: AuthContext | null, b: AuthContext | null): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  return (
    a.userId === b.userId &&
    a.role === b.role &&
    a.status === b.status &&
    a.tokenId === b.tokenId &&
    a.apiKeyId === b.apiKeyId &&
    a.scopes.length === b.scopes.length &&
    a.scopes.every((scope, i) => scope === b.scopes[i])
  );
}
