import type { components } from "./schema.ts";

export type Token = components["schemas"]["Token"];
export type Scope = components["schemas"]["TokenRequest"]["scope"][number];

export interface TokenSourceOptions {
  /** Exchanges the API key for a token (POST /v1/auth/token). */
  exchange: () => Promise<Token>;
  /** Renew this long before `expires_at` (default 300 s: covers clock skew and slow calls). */
  renewBeforeSeconds?: number | undefined;
  /** Milliseconds since the epoch (default Date.now). */
  now?: (() => number) | undefined;
}

/**
 * The bearer token of an API key: exchanged on first use and again once it is within
 * `renewBeforeSeconds` of `expires_at`. Callers that need one at the same time share one exchange.
 */
export class TokenSource {
  private current: Token | null = null;
  private exchanging: Promise<Token> | null = null;
  private readonly renewBeforeMs: number;
  private readonly now: () => number;

  constructor(private readonly options: TokenSourceOptions) {
    this.renewBeforeMs = (options.renewBeforeSeconds ?? 300) * 1000;
    this.now = options.now ?? Date.now;
  }

  /** A token valid for at least `renewBeforeSeconds` more. */
  async token(): Promise<Token> {
    if (this.current && this.now() < Date.parse(this.current.expires_at) - this.renewBeforeMs) return this.current;
    this.exchanging ??= this.options.exchange().finally(() => {
      this.exchanging = null;
    });
    this.current = await this.exchanging;
    return this.current;
  }

  /** Forget the token (after revoking it): the next call exchanges the key again. */
  clear(): void {
    this.current = null;
  }
}
