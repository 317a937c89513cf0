import { readFileSync } from "node:fs";
import { createPublicClient, createWalletClient, getAddress, http, type Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { hardhat } from "viem/chains";
import { createSiweMessage } from "viem/siwe";
import { describe, expect, it } from "vitest";
import { testEnvironment } from "../support/environment.ts";
import { expectProblem, useTestApi } from "../support/api.ts";

/** Hardhat dev account #3: used only by this file, so its nonces race with nothing. */
const DEPLOYER_KEY = "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6";

const api = useTestApi();

async function nonce(): Promise<string> {
  const res = await api.request("POST", "/v1/auth/siwe/nonce");
  expect(res.status).toBe(201);
  return res.body.nonce;
}

function message(address: `0x${string}`, n: string, overrides: Partial<Parameters<typeof createSiweMessage>[0]> = {}) {
  return createSiweMessage({
    domain: "api.test.local",
    address,
    statement: "Sign in to the art platform",
    uri: "https://api.test.local/login",
    version: "1",
    chainId: api.config.chain.id,
    nonce: n,
    issuedAt: new Date(),
    ...overrides,
  });
}

describe("Sign-In with Ethereum", () => {
  it("signs in with a real signature, creating the wallet's user once", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const msg = message(account.address, await nonce());
    const res = await api.request("POST", "/v1/auth/siwe/verify", { body: { message: msg, signature: await account.signMessage({ message: msg }) } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ token_type: "Bearer", scope: ["write"] });

    const me = await api.request("GET", "/v1/users/me", { token: res.body.token });
    expect(me.status).toBe(200);
    expect(me.body.wallet_address).toBe(account.address);
    expect(me.body.role).toBe("collector");

    const msg2 = message(account.address, await nonce());
    const again = await api.request("POST", "/v1/auth/siwe/verify", {
      body: { message: msg2, signature: await account.signMessage({ message: msg2 }), scope: ["users:read"] },
    });
    expect(again.status).toBe(201);
    const me2 = await api.request("GET", "/v1/users/me", { token: again.body.token });
    expect(me2.body.id).toBe(me.body.id);
    const users = await api.db.selectFrom("users").select("id").where("wallet_address", "=", account.address).execute();
    expect(users).toHaveLength(1);
  });

  it("refuses a replayed nonce, a foreign domain or chain, an expired message and a wrong signer", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const intruder = privateKeyToAccount(generatePrivateKey());
    const sign = (m: string) => account.signMessage({ message: m });

    const n = await nonce();
    const msg = message(account.address, n);
    expect((await api.request("POST", "/v1/auth/siwe/verify", { body: { message: msg, signature: await sign(msg) } })).status).toBe(201);
    expectProblem(await api.request("POST", "/v1/auth/siwe/verify", { body: { message: msg, signature: await sign(msg) } }), 401, "invalid_credentials");

    const foreign = message(account.address, await nonce(), { domain: "evil.example" });
    expectProblem(await api.request("POST", "/v1/auth/siwe/verify", { body: { message: foreign, signature: await sign(foreign) } }), 401, "invalid_credentials");
    const otherChain = message(account.address, await nonce(), { chainId: 1 });
    expectProblem(await api.request("POST", "/v1/auth/siwe/verify", { body: { message: otherChain, signature: await sign(otherChain) } }), 401, "invalid_credentials");
    const expired = message(account.address, await nonce(), { expirationTime: new Date(Date.now() - 1000) });
    expectProblem(await api.request("POST", "/v1/auth/siwe/verify", { body: { message: expired, signature: await sign(expired) } }), 401, "invalid_credentials");
    const unknownNonce = message(account.address, "abcdef0123456789");
    expectProblem(await api.request("POST", "/v1/auth/siwe/verify", { body: { message: unknownNonce, signature: await sign(unknownNonce) } }), 401, "invalid_credentials");

    const stolen = message(account.address, await nonce());
    expectProblem(
      await api.request("POST", "/v1/auth/siwe/verify", { body: { message: stolen, signature: await intruder.signMessage({ message: stolen }) } }),
      401,
      "invalid_credentials",
    );
    expect(await api.db.selectFrom("users").select("id").where("wallet_address", "=", intruder.address).execute()).toHaveLength(0);

    expectProblem(await api.request("POST", "/v1/auth/siwe/verify", { body: { message: "hello", signature: "0x1234" } }), 400, "validation_failed");
    expectProblem(await api.request("POST", "/v1/auth/siwe/verify", { body: { message: msg, signature: "not-hex" } }), 400, "validation_failed");
  });

  it("refuses a message whose URI is not this service's (issue 14)", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    for (const uri of ["https://evil.example/login", "https://api.test.local.evil.example/", "http://api.test.local:8443/login"]) {
      const msg = message(account.address, await nonce(), { uri });
      const res = await api.request("POST", "/v1/auth/siwe/verify", { body: { message: msg, signature: await account.signMessage({ message: msg }) } });
      expectProblem(res, 401, "invalid_credentials");
      expect(res.body.detail).toContain("URI");
    }
    expect(await api.db.selectFrom("users").select("id").where("wallet_address", "=", account.address).execute()).toHaveLength(0);
    const ok = message(account.address, await nonce(), { uri: "https://api.test.local/some/page" });
    expect((await api.request("POST", "/v1/auth/siwe/verify", { body: { message: ok, signature: await account.signMessage({ message: ok }) } })).status).toBe(201);
  });

  it("names a wallet's new user with a neutral handle that reveals nothing of the address (issue 14)", async () => {
    const handles = [];
    for (let i = 0; i < 2; i++) {
      const account = privateKeyToAccount(generatePrivateKey());
      const msg = message(account.address, await nonce());
      const res = await api.request("POST", "/v1/auth/siwe/verify", { body: { message: msg, signature: await account.signMessage({ message: msg }) } });
      expect(res.status).toBe(201);
      const stored = await api.db.selectFrom("users").select(["id", "username", "display_name"]).where("wallet_address", "=", account.address).executeTakeFirstOrThrow();
      const profile = await api.request("GET", `/v1/users/${stored.id}`);
      expect(profile.body).toMatchObject({ username: stored.username, display_name: stored.display_name });
      expect(stored.username).toMatch(/^[a-z]+-[a-z]+-\d{4}$/);
      expect(stored.display_name).toMatch(/^[A-Z][a-z]+ [A-Z][a-z]+ \d{4}$/);
      const hex = account.address.slice(2).toLowerCase();
      for (const shown of [stored.username.toLowerCase(), stored.display_name.toLowerCase(), profile.text.toLowerCase()]) {
        expect(shown).not.toContain(hex.slice(0, 6));
        expect(shown).not.toContain(hex.slice(-6));
        expect(shown).not.toContain(`0x${hex.slice(0, 4)}`);
      }
      handles.push(stored.username);
    }
    expect(handles[0]).not.toBe(handles[1]);
  });

  it("lets a narrow SIWE token log out (issue 7)", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const msg = message(account.address, await nonce());
    const signed = await api.request("POST", "/v1/auth/siwe/verify", {
      body: { message: msg, signature: await account.signMessage({ message: msg }), scope: ["artworks:read"] },
    });
    expect(signed.status).toBe(201);
    const out = await api.request("DELETE", "/v1/auth/token", { token: signed.body.token });
    expect(out.status).toBe(200);
    const user = await api.db.selectFrom("users").select("id").where("wallet_address", "=", account.address).executeTakeFirstOrThrow();
    const tokens = await api.db.selectFrom("access_tokens").select("revoked_at").where("user_id", "=", user.id).execute();
    expect(tokens).toHaveLength(1);
    expect(tokens[0]!.revoked_at).toBeInstanceOf(Date);
    expectProblem(await api.request("GET", "/v1/artworks", { token: signed.body.token }), 401, "token_revoked");
  });

  it("lets exactly one of two racing sign-ins consume a nonce", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const msg = message(account.address, await nonce());
    const signature = await account.signMessage({ message: msg });
    const results = await Promise.all(
      Array.from({ length: 6 }, () => api.request("POST", "/v1/auth/siwe/verify", { body: { message: msg, signature } })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 401)).toHaveLength(5);
    expect(await api.db.selectFrom("users").select("id").where("wallet_address", "=", account.address).execute()).toHaveLength(1);
  });

  it("signs in a smart-contract wallet through ERC-1271", async () => {
    const env = testEnvironment();
    const chain = { ...hardhat, id: env.chainId };
    const deployer = createWalletClient({ account: privateKeyToAccount(DEPLOYER_KEY), chain, transport: http(env.rpcUrl) });
    const publicClient = createPublicClient({ chain, transport: http(env.rpcUrl) });
    const artifact = JSON.parse(readFileSync("artifacts/contracts/test/ERC1271WalletMock.sol/ERC1271WalletMock.json", "utf8"));
    const owner = privateKeyToAccount(generatePrivateKey());
    const hash = await deployer.deployContract({ abi: artifact.abi, bytecode: artifact.bytecode as Hex, args: [owner.address] });
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    const wallet = getAddress(receipt.contractAddress!);

    const msg = message(wallet, await nonce());
    const res = await api.request("POST", "/v1/auth/siwe/verify", { body: { message: msg, signature: await owner.signMessage({ message: msg }) } });
    expect(res.status).toBe(201);
    const me = await api.request("GET", "/v1/users/me", { token: res.body.token });
    expect(me.body.wallet_address).toBe(wallet);

    const stranger = privateKeyToAccount(generatePrivateKey());
    const msg2 = message(wallet, await nonce());
    expectProblem(
      await api.request("POST", "/v1/auth/siwe/verify", { body: { message: msg2, signature: await stranger.signMessage({ message: msg2 }) } }),
      401,
      "invalid_credentials",
    );
  });
});
