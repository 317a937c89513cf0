import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import siwe from "siwe";
import { getAddress, type Hex, type PublicClient } from "viem";
import type { Logger } from "pino";
import type { Config } from "../../config.ts";
import type { Database, Db } from "../../db/database.ts";
import { CREDENTIALS_CHANGED, credentialsChanged, NotificationListener } from "../../db/notifications.ts";
import { GroupedWrites } from "../../db/grouped-writes.ts";
import { type Transact, transactOn } from "../../db/transact.ts";
import { lockNamed } from "../../db/locks.ts";
import { ApiError } from "../../lib/errors.ts";
import { isId, newId } from "../../lib/ids.ts";
import { hashSecret, newSecret } from "../../lib/secrets.ts";
import { iso } from "../../lib/time.ts";
import type { UsersService } from "../users/users.service.ts";
import type { AuthContext, Role } from "../../lib/actor.ts";
import * as repo from "./auth.repository.ts";
import { ALL_SCOPES, fullScopesOf, type Scope, scopeCovers, scopesDeniedForRole } from "../../lib/scopes.ts";

export const TOKEN_TTL_MS = 24 * 60 * 60 * 1000;
export const NONCE_TTL_MS = 10 * 60 * 1000;
/** How far a SIWE `issuedAt` may lie in the future (clock skew) or the past. */
const SIWE_MAX_SKEW_MS = 5 * 60 * 1000;
const SIWE_MAX_AGE_MS = NONCE_TTL_MS;
const NONCE_REFUSED = "the nonce is unknown, expired or already used";
/** How long a resolved credential is reused (without a notification to forget it sooner). */
const CREDENTIAL_CACHE_MS = 5_000;
const CREDENTIAL_CACHE_ENTRIES = 10_000;

/**
 * A bearer token as answered (and, under an Idempotency-Key, stored and replayed to the same
 * caller for 24 h, as Stripe replays what it answered: a retried exchange gets the same token).
 */
export interface IssuedToken {
  token: string;
  token_type: "Bearer";
  expires_at: string;
  scope: string[];
}

/** A resolved bearer credential; an API key's own scope cap (null: its role's) beside its context. */
interface Credential {
  context: AuthContext;
  kind: "token" | "api_key";
  keyScopes?: string[] | null;
  expiresAt: number;
}

export class AuthService {
  /** Origins a SIWE message's `URI:` may name: this service's (PUBLIC_BASE_URL's, or a SIWE domain's). */
  private readonly siweOrigins: Set<string>;
  /** Resolved credentials by secret hash (see cacheCredentials); null: none are kept. */
  private credentials: Map<string, Credential & { until: number }> | null = null;
  /** Counts changes, so that a credential read before one is not kept after it. */
  private generation = 0;
  /** Tokens of the key exchanges under way, written together (see issueToken). */
  readonly exchanges = new GroupedWrites(async (rows: Parameters<typeof repo.insertTokensForApiKeys>[1]) => {
    const written = new Map((await repo.insertTokensForApiKeys(this.db, rows)).map((row) => [row.id, row]));
    return rows.map((row) => {
      const found = written.get(row.id);
      if (!found) throw new Error(`token ${row.id} was not written`);
      return found;
    });
  });

  constructor(
    private readonly db: Kysely<Database>,
    private readonly config: Config,
    private readonly users: UsersService,
    private readonly publicClient: PublicClient,
  ) {
    const schemes = config.production ? ["https"] : ["https", "http"];
    const candidates = [config.publicBaseUrl, ...config.siweDomains.flatMap((d) => schemes.map((scheme) => `${scheme}://${d}`))];
    this.siweOrigins = new Set(candidates.map(originOf).filter((o) => o !== "null"));
  }

  /**
   * Resolves the bearer credential of a request (its Authorization header); null when none was sent.
   * The bearer is an access token or an API key itself, on every endpoint alike (as Stripe takes its
   * secret keys): a key acts as its user with its own scopes (its cap, or its user's role's).
   */
  async authenticate(header: string | undefined): Promise<AuthContext | null> {
    if (header === undefined) return null;
    const match = /^Bearer[ ]+([^\s]+)\s*$/i.exec(header);
    if (!match?.[1]) throw new ApiError(401, "token_invalid", "The Authorization header must be `Bearer <token or API key>`", bearerChallenge("invalid_token"));
    const credential = await this.credentialOf(hashSecret(match[1]));
    if (credential.expiresAt <= Date.now()) throw new ApiError(401, "token_expired", "This token has expired; exchange your API key for a new one", bearerChallenge("invalid_token"));
    return credential.context;
  }

  /** The credential of a secret's hash: kept (see cacheCredentials), else resolved and kept. Refusals throw. */
  private async credentialOf(hash: string, opts: { apiKeyOnly?: boolean } = {}): Promise<Credential> {
    const cached = this.credentials?.get(hash);
    if (cached && cached.until > Date.now() && !(opts.apiKeyOnly && cached.kind === "token")) return cached;
    const generation = this.generation;
    const resolved = await this.resolve(hash, opts);
    // Kept unless a change arrived while it was being read (it may have read the state before).
    if (this.credentials && generation === this.generation) {
      this.credentials.delete(hash);
      this.credentials.set(hash, { ...resolved, until: Date.now() + CREDENTIAL_CACHE_MS });
      if (this.credentials.size > CREDENTIAL_CACHE_ENTRIES) this.credentials.delete(this.credentials.keys().next().value!);
    }
    return resolved;
  }

  /**
   * Keeps resolved credentials (tokens and API keys of active users) for CREDENTIAL_CACHE_MS in this
   * process while a LISTEN connection for credential changes is up, and forgets all of them on every
   * change: a revocation, a suspension or a new role takes effect at once in every process, as the
   * database's triggers NOTIFY on commit. Without the connection nothing is kept. Returns the stop.
   */
  cacheCredentials(options: { databaseUrl: string; logger: Logger }): () => Promise<void> {
    const listener = new NotificationListener({
      databaseUrl: options.databaseUrl,
      channel: CREDENTIALS_CHANGED,
      name: "credentials-listener",
      onNotify: () => this.forget(),
      onReady: () => {
        this.forget();
        this.credentials = new Map();
      },
      onLost: () => {
        this.credentials = null;
        this.forget();
      },
      logger: options.logger,
    });
    listener.start();
    return () => {
      this.credentials = null;
      return listener.stop();
    };
  }

  /** Drops every kept credential (a change to any of them). */
  private forget(): void {
    this.generation++;
    this.credentials?.clear();
  }

  /** The credential of a secret's hash, from the database; refusals throw (and are never kept). */
  private async resolve(hash: string, opts: { apiKeyOnly?: boolean }): Promise<Credential> {
    const token = opts.apiKeyOnly ? undefined : await repo.findTokenByHash(this.db, hash);
    if (token) {
      if (token.revoked_at || token.api_key_revoked_at) throw new ApiError(401, "token_revoked", "This token has been revoked", bearerChallenge("invalid_token"));
      if (token.expires_at.getTime() <= Date.now()) throw new ApiError(401, "token_expired", "This token has expired; exchange your API key for a new one", bearerChallenge("invalid_token"));
      assertActive(token.status);
      return {
        kind: "token",
        expiresAt: token.expires_at.getTime(),
        context: { userId: token.user_id, role: token.role, status: token.status, tokenId: token.id, apiKeyId: token.api_key_id, scopes: token.scopes, principal: `user:${token.user_id}` },
      };
    }
    const key = await repo.findApiKeyByHash(this.db, hash);
    if (!key) throw new ApiError(401, "token_invalid", "The bearer token is not valid", bearerChallenge("invalid_token"));
    if (key.revoked_at) throw new ApiError(401, "token_revoked", "This API key has been revoked", bearerChallenge("invalid_token"));
    assertActive(key.status);
    return {
      kind: "api_key",
      keyScopes: key.scopes,
      expiresAt: Number.POSITIVE_INFINITY,
      context: {
        userId: key.user_id,
        role: key.role,
        status: key.status,
        tokenId: null,
        apiKeyId: key.id,
        scopes: key.scopes ?? fullScopesOf(key.role),
        principal: `user:${key.user_id}`,
      },
    };
  }

  /** POST /v1/auth/token: an API key and the scopes wanted, for a 24 h bearer token. */
  async exchangeApiKey(apiKey: string, scopes: Scope[], transact: Transact = transactOn(this.db)): Promise<IssuedToken> {
    // The key as kept for its use as a bearer (forgotten on any change to keys or users, see cacheCredentials).
    const key = await this.credentialOf(hashSecret(apiKey), { apiKeyOnly: true }).catch((err: unknown) => {
      if (err instanceof ApiError && (err.code === "token_invalid" || err.code === "token_revoked")) throw new ApiError(401, "invalid_credentials", "The API key is not valid or has been revoked");
      throw err;
    });
    if (key.kind !== "api_key") throw new ApiError(401, "invalid_credentials", "The API key is not valid or has been revoked");
    const { userId, role, apiKeyId } = key.context;
    assertScopesAllowed(role, scopes);
    if (key.keyScopes) assertWithinCap(key.keyScopes, scopes, "This API key");
    // One statement: without an Idempotency-Key, no transaction around it, and written together
    // with the exchanges of other requests under way (one statement for all of them).
    const run = transact.selfCommitting ?? transact;
    return run((db, how?: { alone: boolean }) => this.issueToken(db, userId, apiKeyId, scopes, how?.alone === true));
  }

  async revoke(auth: AuthContext): Promise<{ revoked: true; revoked_at: Date }> {
    if (!auth.tokenId) throw new ApiError(400, "invalid_parameter", "Only access tokens can be revoked here; delete an API key with DELETE /v1/api-keys/:id");
    const revokedAt = await repo.revokeToken(this.db, auth.tokenId);
    credentialsChanged(auth.userId);
    return { revoked: true, revoked_at: revokedAt };
  }

  async createNonce(transact: Transact = transactOn(this.db)): Promise<{ nonce: string; expires_at: string }> {
    // EIP-4361 nonces are alphanumeric, at least 8 characters.
    const nonce = randomBytes(16).toString("hex");
    const expiresAt = new Date(Date.now() + NONCE_TTL_MS);
    return transact(async (trx) => {
      await repo.insertNonce(trx, nonce, expiresAt);
      return { nonce, expires_at: iso(expiresAt) };
    });
  }

  /** POST /v1/auth/siwe/verify: an EIP-4361 message and its signature, for a bearer token. */
  async verifySiwe(message: string, signature: Hex, scopes: Scope[], transact: Transact = transactOn(this.db)): Promise<IssuedToken> {
    const fail = (detail: string) => new ApiError(401, "invalid_credentials", `Sign-in refused: ${detail}`);
    const proof = await this.checkSiwe(message, signature, fail);
    return transact(async (trx) => {
      if (!(await repo.consumeNonce(trx, proof.nonce))) throw fail(NONCE_REFUSED);
      const user = await this.users.findOrCreateWalletUser(trx, proof.address);
      // A linked wallet proves what its user holds, not who they are: it never becomes a credential.
      if (user.wallet_address.toLowerCase() !== proof.address.toLowerCase()) throw fail("the wallet is linked to an account as a wallet of its own, not for sign-in; use that account's API key");
      assertActive(user.status);
      assertScopesAllowed(user.role, scopes);
      const issued = await this.issueToken(trx, user.id, null, scopes);
      await repo.touchLogin(trx, user.id);
      return issued;
    });
  }

  /**
   * The address that signed a SIWE message for this service, checked as a sign-in is (domain, URI,
   * chain, expiry, the signature of an EOA or an ERC-1271/6492 wallet), its nonce consumed in `trx`:
   * a wallet's proof of control, for linking it to an account. Refusals are 400 `validation_failed`
   * naming what failed (the caller's credential is fine; the proof is not).
   */
  async proveWallet(trx: Db, message: string, signature: Hex): Promise<`0x${string}`> {
    const fail = (detail: string) => ApiError.validation([{ field: "signature", code: "wallet_proof_refused", message: detail }], `The wallet's proof is refused: ${detail}`);
    const proof = await this.checkSiwe(message, signature, fail);
    if (!(await repo.consumeNonce(trx, proof.nonce))) throw fail(NONCE_REFUSED);
    return proof.address;
  }

  /** Everything of a SIWE message but its nonce's consumption; `fail` makes the refusal. */
  private async checkSiwe(message: string, signature: Hex, fail: (detail: string) => ApiError): Promise<{ address: `0x${string}`; nonce: string }> {
    let parsed: InstanceType<typeof siwe.SiweMessage>;
    try {
      parsed = new siwe.SiweMessage(message);
    } catch (err) {
      throw ApiError.validation([{ field: "message", code: "invalid_siwe_message", message: `not an EIP-4361 message: ${(err as Error).message ?? err}` }]);
    }
    if (!this.config.siweDomains.includes(parsed.domain)) throw fail(`domain ${parsed.domain} is not this service (${this.config.siweDomains.join(", ")})`);
    if (!this.siweOrigins.has(originOf(parsed.uri))) throw fail(`URI ${parsed.uri} is not on this service (${[...this.siweOrigins].join(", ")})`);
    if (parsed.chainId !== this.config.chain.id) throw fail(`chain id ${parsed.chainId} is not ${this.config.chain.id}`);
    if (parsed.version !== "1") throw fail("version must be 1");
    const now = Date.now();
    if (parsed.expirationTime && Date.parse(parsed.expirationTime) <= now) throw fail("the message has expired");
    if (parsed.notBefore && Date.parse(parsed.notBefore) > now + SIWE_MAX_SKEW_MS) throw fail("the message is not valid yet");
    if (parsed.issuedAt) {
      const issued = Date.parse(parsed.issuedAt);
      if (Number.isNaN(issued) || issued > now + SIWE_MAX_SKEW_MS || issued < now - SIWE_MAX_AGE_MS - SIWE_MAX_SKEW_MS) throw fail("issuedAt is out of range");
    }
    const address = getAddress(parsed.address);

    // viem checks EOA signatures, ERC-1271 contract wallets and ERC-6492 counterfactual wallets.
    let valid = false;
    try {
      valid = await this.publicClient.verifyMessage({ address, message, signature });
    } catch {
      valid = false;
    }
    if (!valid) throw fail("the signature does not match the address");
    return { address, nonce: parsed.nonce };
  }

  // API keys ------------------------------------------------------------------------------------

  /** A key the platform issues to a user (an admin-created user's first key, the bootstrap key): capped by the role only. */
  async createApiKey(userId: string, name: string | null, db: Kysely<Database> = this.db) {
    const secret = newSecret("sk");
    const row = await repo.insertApiKey(db, { ...keyRow(userId, name, secret), scopes: null, parent_api_key_id: null });
    return { ...row, secret };
  }

  /**
   * POST /v1/api-keys: a key capped at `scopes` (default: the caller's), which the caller's token
   * must cover and the caller's role (as committed, under the user's credentials lock) must allow;
   * it dies with the key the caller's token came from.
   */
  async createApiKeyFor(caller: AuthContext, name: string | null, scopes: Scope[] | undefined, transact: Transact = transactOn(this.db)) {
    const cap = [...new Set(scopes ?? (caller.scopes as Scope[]))];
    assertWithinCap(caller.scopes, cap, "Your token");
    const secret = newSecret("sk");
    return transact(async (trx) => {
      // The role as it is now, not as the token was issued (docs/integrators/auth.md#api-keys): read
      // under the lock a change of role takes before it revokes what the new role may not hold, so
      // a key made meanwhile is refused by the new role or committed before that revocation looks.
      await lockCredentials(trx, caller.userId);
      assertScopesAllowed((await this.users.getIn(trx, caller.userId)).role, cap);
      if (caller.apiKeyId && !(await repo.lockLiveApiKey(trx, caller.apiKeyId))) {
        throw new ApiError(401, "token_revoked", "This token has been revoked", bearerChallenge("invalid_token"));
      }
      const row = await repo.insertApiKey(trx, { ...keyRow(caller.userId, name, secret), scopes: cap, parent_api_key_id: caller.apiKeyId });
      return { id: row.id, name: row.name, secret, scopes: cap, parent_key_id: row.parent_api_key_id, created_at: iso(row.created_at) };
    });
  }

  /** Registers an operator-chosen secret (BOOTSTRAP_ADMIN_API_KEY). */
  async registerApiKey(userId: string, name: string, secret: string, db: Kysely<Database> = this.db) {
    return repo.insertApiKey(db, { ...keyRow(userId, name, secret), scopes: null, parent_api_key_id: null });
  }

  /** The user's live keys, each with the scopes it may grant (a key without a cap of its own: the role's). */
  async listApiKeys(userId: string, role: AuthContext["role"]) {
    return (await repo.listApiKeys(this.db, userId)).map((k) => ({ ...k, scopes: k.scopes ?? fullScopesOf(role) }));
  }

  /**
   * A change of the user's role, in its transaction `db`: revokes every live token and API key of
   * the user holding a scope `role` may not hold (a demoted admin's `admin` and `admin:*` ones),
   * a key with the keys made with its tokens and all their tokens, as DELETE /v1/api-keys/:id does.
   * A key without a cap of its own grants its user's role, whatever it is, and stays. Taken under
   * the user's credentials lock, as a new key is made (createApiKeyFor). The users module calls it
   * (UsersService.registerCredentialsOfRole); the notifications of the change go out at its commit.
   */
  async revokeCredentialsBeyond(db: Db, userId: string, role: Role): Promise<void> {
    const denied = scopesDeniedForRole(role, ALL_SCOPES);
    if (denied.length === 0) return;
    await lockCredentials(db, userId);
    await repo.revokeCredentialsHolding(db, userId, denied);
  }

  async revokeApiKey(userId: string, apiKeyId: string): Promise<Date> {
    const revokedAt = isId("apiKey", apiKeyId)
      ? await this.db.transaction().execute((trx) => repo.revokeApiKey(trx, userId, apiKeyId))
      : null;
    if (!revokedAt) throw ApiError.notFound("API key");
    credentialsChanged(userId);
    return revokedAt;
  }

  purgeExpired(): Promise<void> {
    return repo.purgeExpiredCredentials(this.db);
  }

  /**
   * A new token, written on `db`; or, when `grouped` (the write commits on its own), by the next
   * statement that writes the exchanges under way together (GroupedWrites).
   */
  private async issueToken(db: Db, userId: string, apiKeyId: string | null, scopes: Scope[], grouped = false): Promise<IssuedToken> {
    const token = newSecret("at");
    const unique = [...new Set(scopes)];
    const fields = { id: newId("accessToken"), user_id: userId, token_hash: hashSecret(token), scopes: unique, expires_at: new Date(Date.now() + TOKEN_TTL_MS) };
    // For an API key, its last use and the user's login are recorded by the same statement.
    const row = !apiKeyId
      ? await repo.insertToken(db, { ...fields, api_key_id: null })
      : grouped
        ? await this.exchanges.add({ ...fields, api_key_id: apiKeyId })
        : (await repo.insertTokensForApiKeys(db, [{ ...fields, api_key_id: apiKeyId }]))[0]!;
    return { token, token_type: "Bearer", expires_at: iso(row.expires_at as Date), scope: unique };
  }
}

function keyRow(userId: string, name: string | null, secret: string) {
  return { id: newId("apiKey"), user_id: userId, name, secret_hash: hashSecret(secret), secret_hint: secret.slice(0, 7) };
}

function originOf(uri: string): string {
  try {
    return new URL(uri).origin;
  } catch {
    return "null";
  }
}

function assertWithinCap(cap: readonly string[], scopes: readonly Scope[], holder: string): void {
  const above = scopes.filter((s) => !scopeCovers(cap, s));
  if (above.length > 0) {
    throw new ApiError(403, "insufficient_scope", `${holder} is limited to ${cap.join(", ")}: it cannot grant ${above.join(", ")}`);
  }
}

function bearerChallenge(error: string) {
  return { headers: { "WWW-Authenticate": `Bearer realm="api", error="${error}"` } };
}

/** Serializes the making of a user's keys with the revocations of a change of their role (until commit). */
function lockCredentials(trx: Db, userId: string): Promise<void> {
  return lockNamed(trx, `credentials:${userId}`);
}

function assertActive(status: string): void {
  if (status !== "active") throw new ApiError(403, "account_suspended", "This account is suspended");
}

function assertScopesAllowed(role: Parameters<typeof scopesDeniedForRole>[0], scopes: Scope[]): void {
  const denied = scopesDeniedForRole(role, scopes);
  if (denied.length > 0) {
    throw new ApiError(403, "insufficient_scope", `Your role (${role}) may not hold the scope${denied.length > 1 ? "s" : ""} ${denied.join(", ")}`);
  }
}
