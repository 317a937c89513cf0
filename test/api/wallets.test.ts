/**
 * Linked wallets: a user proves control of a wallet with a real SIWE signature and links it to their
 * account (POST /v1/users/me/wallets). The proof is the sign-in's: replayed nonces, wrong signers and
 * ERC-1271 wallets whose signature fails are refused; a wallet is one account's at most. No indexer is
 * needed here (what a linked wallet holds is withdrawals.test.ts's), so this file runs on the shared
 * test API rather than a platform of its own.
 */
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { erc1271Wallet, signedLink } from "../support/wallets.ts";
import { createUser, expectProblem, useTestApi } from "../support/api.ts";

const api = useTestApi();

const link = (token: string, body: unknown) => api.request("POST", "/v1/users/me/wallets", { token, body });
const linkedRows = (userId: string) => api.db.selectFrom("user_wallets").selectAll().where("user_id", "=", userId).execute();

describe("linked wallets", () => {
  it("links a wallet with a real signature, lists it, links it again as it is, and unlinks it", async () => {
    const user = await createUser(api);
    const wallet = privateKeyToAccount(generatePrivateKey());
    const res = await link(user.token, await signedLink(api, wallet));
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ address: wallet.address, linked_at: expect.stringMatching(/Z$/) });
    expect(await linkedRows(user.id)).toEqual([{ address: wallet.address.toLowerCase(), user_id: user.id, linked_at: expect.any(Date) }]);

    const again = await link(user.token, await signedLink(api, wallet));
    expect(again.status).toBe(201);
    expect(again.body).toEqual(res.body);

    const listed = await api.request("GET", "/v1/users/me/wallets", { token: user.token });
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ data: [res.body] });

    const other = await createUser(api);
    expect((await api.request("GET", "/v1/users/me/wallets", { token: other.token })).body).toEqual({ data: [] });
    expectProblem(await api.request("DELETE", `/v1/users/me/wallets/${wallet.address}`, { token: other.token }), 404, "not_found");

    // Any case names the wallet.
    const removed = await api.request("DELETE", `/v1/users/me/wallets/${wallet.address.toLowerCase()}`, { token: user.token });
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ address: wallet.address, unlinked: true });
    expect(await linkedRows(user.id)).toEqual([]);
    expectProblem(await api.request("DELETE", `/v1/users/me/wallets/${wallet.address}`, { token: user.token }), 404, "not_found");
    expectProblem(await api.request("DELETE", "/v1/users/me/wallets/not-an-address", { token: user.token }), 404, "not_found");
  });

  it("refuses a replayed nonce, a wrong signer, a foreign domain, and links nothing", async () => {
    const user = await createUser(api);
    const wallet = privateKeyToAccount(generatePrivateKey());
    const first = await signedLink(api, wallet);
    expect((await link(user.token, first)).status).toBe(201);
    await api.request("DELETE", `/v1/users/me/wallets/${wallet.address}`, { token: user.token });

    // The same signed message again: its nonce was consumed by the first link.
    const replayed = await link(user.token, first);
    expectProblem(replayed, 400, "validation_failed");
    expect(replayed.body.detail).toContain("nonce");

    const intruder = privateKeyToAccount(generatePrivateKey());
    const stolen = await signedLink(api, intruder, wallet.address);
    const wrongSigner = await link(user.token, stolen);
    expectProblem(wrongSigner, 400, "validation_failed");
    expect(wrongSigner.body.errors).toEqual([{ field: "signature", code: "wallet_proof_refused", message: "the signature does not match the address" }]);

    expectProblem(await link(user.token, await signedLink(api, wallet, wallet.address, { domain: "evil.example" })), 400, "validation_failed");
    expectProblem(await link(user.token, await signedLink(api, wallet, wallet.address, { chainId: 1 })), 400, "validation_failed");
    expect(await linkedRows(user.id)).toEqual([]);

    // The wallet's own signature of a fresh message links.
    expect((await link(user.token, await signedLink(api, wallet))).status).toBe(201);
  });

  it("keeps a wallet to one account: linked elsewhere, or another account's sign-in wallet, is 409; a linked wallet does not sign in", async () => {
    const [owner, other] = await Promise.all([createUser(api), createUser(api)]);
    const wallet = privateKeyToAccount(generatePrivateKey());
    expect((await link(owner.token, await signedLink(api, wallet))).status).toBe(201);
    expectProblem(await link(other.token, await signedLink(api, wallet)), 409, "conflict");
    expect(await linkedRows(other.id)).toEqual([]);

    // A linked wallet proves what its user holds, not who they are: no token, and no second account.
    const signIn = await api.request("POST", "/v1/auth/siwe/verify", { body: await signedLink(api, wallet) });
    expectProblem(signIn, 401, "invalid_credentials");
    expect(signIn.body.detail).toContain("linked");
    expect(await api.db.selectFrom("users").select("id").where("wallet_address", "ilike", wallet.address).execute()).toEqual([]);

    // Another account's sign-in wallet stays its own.
    const siweUser = privateKeyToAccount(generatePrivateKey());
    expect((await api.request("POST", "/v1/auth/siwe/verify", { body: await signedLink(api, siweUser) })).status).toBe(201);
    expectProblem(await link(owner.token, await signedLink(api, siweUser)), 409, "conflict");
  });

  it("links concurrently once: of two accounts racing for one wallet, one wins", async () => {
    const users = await Promise.all([createUser(api), createUser(api), createUser(api)]);
    const wallet = privateKeyToAccount(generatePrivateKey());
    const proofs = await Promise.all(users.map(() => signedLink(api, wallet)));
    const results = await Promise.all(users.map((u, i) => link(u.token, proofs[i])));
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409]);
    expect(await api.db.selectFrom("user_wallets").selectAll().where("address", "=", wallet.address.toLowerCase()).execute()).toHaveLength(1);
  });

  it("links an ERC-1271 wallet by its owner's signature, and refuses a stranger's", async () => {
    const owner = privateKeyToAccount(generatePrivateKey());
    const contractWallet = await erc1271Wallet(owner);

    const user = await createUser(api);
    const stranger = privateKeyToAccount(generatePrivateKey());
    const refused = await link(user.token, await signedLink(api, stranger, contractWallet));
    expectProblem(refused, 400, "validation_failed");
    expect(refused.body.detail).toContain("signature does not match");

    const linked = await link(user.token, await signedLink(api, owner, contractWallet));
    expect(linked.status).toBe(201);
    expect(linked.body.address).toBe(contractWallet);
  });

  it("needs a credential, and the coarse write scope to link or unlink (withdrawals may go to a linked wallet)", async () => {
    const wallet = privateKeyToAccount(generatePrivateKey());
    expectProblem(await api.request("POST", "/v1/users/me/wallets", { body: await signedLink(api, wallet) }), 401, "unauthenticated");
    expectProblem(await api.request("GET", "/v1/users/me/wallets"), 401, "unauthenticated");
    const reader = await createUser(api, { scope: ["users:write"] });
    expectProblem(await link(reader.token, await signedLink(api, wallet)), 403, "insufficient_scope");
    expect((await api.request("GET", "/v1/users/me/wallets", { token: reader.token })).status).toBe(200);
    expectProblem(await api.request("DELETE", `/v1/users/me/wallets/${wallet.address}`, { token: reader.token }), 403, "insufficient_scope");
  });
});
