import type { IndexedCertificate } from "../../chain/indexer-views.ts";
import { escapeHtml } from "../../lib/html.ts";

/** The certificate as the contract itself answers (`certificateOf`, `ownerOf`), and the certifying transaction's sender. */
export interface LiveCertificate {
  certificateHash: `0x${string}`;
  artworkKey: `0x${string}`;
  certifiedAt: Date;
  owner: `0x${string}`;
  sender: `0x${string}`;
}

export interface VerifyPageFacts {
  kind: "pending" | "certified";
  artworkId: string;
  title: string;
  status: string;
  deleted: boolean;
  /** The public certificate document (canonical text) and its keccak256; null before the image is known. */
  document: { canonical: string; hash: `0x${string}` } | null;
  documentUrl: string;
  imageUrl: string | null;
  imageSha256: string | null;
  chainName: string;
  chainId: number;
  contractAddress: string;
  /** A block explorer of the chain, when it has one. */
  explorerUrl: string | null;
  /** What the chain says: the indexer's projection and, when the node answered, the contract read directly. */
  chain: { indexed: IndexedCertificate; live: LiveCertificate | null } | null;
}

export type VerifyPageInput = VerifyPageFacts | { kind: "unknown"; artworkId: string };

/** The page's Content-Security-Policy: no scripts at all; styles inline; images from the API itself. */
export const VERIFY_PAGE_CSP = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

type Verdict = "match" | "mismatch" | "not_certified" | "unknown";

/**
 * A self-contained HTML page for an auditor: the on-chain facts (read from the contract when the
 * node answers, else from the indexer) next to the hash recomputed from the public certificate
 * document, with a verdict. No scripts: it reads the same without JavaScript.
 */
export function renderVerifyPage(input: VerifyPageInput): string {
  if (input.kind === "unknown") {
    return page({
      title: "Certificate not found",
      verdict: "unknown",
      headline: "Unknown artwork",
      explanation: `No artwork with the id ${input.artworkId} is registered on this platform.`,
      body: "",
    });
  }
  const f = input;
  const recomputed = f.document?.hash.toLowerCase() ?? null;
  if (f.kind === "pending" || !f.chain) {
    return page({
      title: `Certificate of ${f.title}`,
      verdict: "not_certified",
      headline: "Not certified (yet)",
      explanation: `No on-chain certificate exists for this artwork (its status is ${f.status}). Certificates appear here once the chain has them.`,
      image: imageOf(f),
      body: documentSection(f, recomputed, null),
    });
  }
  const { indexed, live } = f.chain;
  const onChainHash = (live?.certificateHash ?? indexed.certificateHash).toLowerCase();
  const sourcesAgree = !live || live.certificateHash.toLowerCase() === indexed.certificateHash.toLowerCase();
  const match = recomputed !== null && recomputed === onChainHash && sourcesAgree;
  const explanation = match
    ? "The hash recorded on-chain equals the keccak256 of the public certificate document: the record below is the one that was certified."
    : !sourcesAgree
      ? "The contract and the indexer disagree about this certificate's hash: do not trust this record until they agree."
      : recomputed === null
        ? "The certificate document cannot be rebuilt (the image is missing), so it cannot be checked against the chain."
        : "The hash recorded on-chain differs from the keccak256 of the certificate document this platform serves now: the record has changed since it was certified.";

  // With an explorer, every address, transaction and block is a link to it; without one, plain text.
  const explorer = (kind: "tx" | "address" | "block", value: string | bigint) =>
    f.explorerUrl
      ? `<a href="${escapeHtml(`${f.explorerUrl.replace(/\/$/, "")}/${kind}/${encodeURIComponent(String(value))}`)}">${escapeHtml(value)}</a>`
      : escapeHtml(value);
  const owner = live?.owner ?? indexed.owner;
  const facts: [string, string][] = [
    ["Chain", `${escapeHtml(f.chainName)} (chain id ${escapeHtml(f.chainId)})`],
    ["Contract", `<code id="contract">${explorer("address", f.contractAddress)}</code>`],
    ["Token id", `<span id="token-id">${escapeHtml(indexed.tokenId)}</span>`],
    ["Owner", `<code id="owner">${explorer("address", owner)}</code>`],
    ["Certificate hash (on-chain)", `<code id="onchain-hash">${escapeHtml(onChainHash)}</code>`],
    ["Artwork key", `<code>${escapeHtml(live?.artworkKey ?? indexed.artworkKey)}</code> = keccak256("${escapeHtml(f.artworkId)}")`],
    ["Transaction", `<code id="tx">${explorer("tx", indexed.txHash)}</code>`],
    ["Block", `<span id="block">${explorer("block", indexed.blockNumber)}</span>`],
    ["Certified at", escapeHtml((live?.certifiedAt ?? indexed.certifiedAt).toISOString())],
    ["Issued by", live ? `<code id="issuer">${explorer("address", live.sender)}</code> (the sender of the certifying transaction)` : "unknown (the node did not answer)"],
    ["Royalty", `${escapeHtml(indexed.royaltyBps / 100)} % to <code id="royalty-receiver">${explorer("address", indexed.royaltyReceiver)}</code>`],
    ["Source", live ? "read from the contract now (<code>certificateOf</code>, <code>ownerOf</code>), transaction from the indexer" : "the indexer's projection of the chain (the node did not answer a direct read)"],
  ];
  const chainSection = `
  <section>
    <h2>On-chain facts</h2>
    <table>${facts.map(([k, v]) => `<tr><th scope="row">${escapeHtml(k)}</th><td>${v}</td></tr>`).join("")}</table>
  </section>`;
  return page({
    title: `Certificate of ${f.title}`,
    verdict: match ? "match" : "mismatch",
    headline: match ? "Match: the certificate is authentic" : "Mismatch: the record does not match the chain",
    explanation,
    image: imageOf(f),
    body: chainSection + documentSection(f, recomputed, onChainHash),
  });
}

function imageOf(f: VerifyPageFacts): { url: string; alt: string } | null {
  return f.imageUrl ? { url: f.imageUrl, alt: `The image of ${f.title}` } : null;
}

function documentSection(f: VerifyPageFacts, recomputed: string | null, onChainHash: string | null): string {
  const rows: [string, string][] = [
    ["Artwork", `${escapeHtml(f.title)} (<code>${escapeHtml(f.artworkId)}</code>)${f.deleted ? " — the artwork record was deleted; its certificate remains" : ""}`],
    ["Recomputed hash", recomputed ? `<code id="recomputed-hash">${escapeHtml(recomputed)}</code>` : "not available"],
  ];
  if (f.imageUrl) rows.push(["Image SHA-256", `<code>${escapeHtml(f.imageSha256)}</code> (<a href="${escapeHtml(f.imageUrl)}">image</a>)`]);
  return `
  <section>
    <h2>Certificate document</h2>
    <table>${rows.map(([k, v]) => `<tr><th scope="row">${escapeHtml(k)}</th><td>${v}</td></tr>`).join("")}</table>
    ${f.document ? `<pre id="document">${escapeHtml(f.document.canonical)}</pre>` : ""}
    <p>Recompute it yourself, without this page: download <a id="document-link" href="${escapeHtml(f.documentUrl)}">the certificate document</a>
    (its exact RFC 8785 canonical JSON bytes) and take keccak256 of them, e.g.
    <code>cast keccak "$(curl -s ${escapeHtml(f.documentUrl)})"</code>${onChainHash ? `; it must equal <code>${escapeHtml(onChainHash)}</code>, and the contract's <code>certificateOf(tokenId)</code> must return the same hash` : ""}.
    The image's SHA-256 must equal <code>image_sha256</code> in the document.</p>
  </section>`;
}

function page(p: { title: string; verdict: Verdict; headline: string; explanation: string; image?: { url: string; alt: string } | null; body: string }): string {
  const colors: Record<Verdict, string> = { match: "#0a7a32", mismatch: "#b00020", not_certified: "#8a6d00", unknown: "#555" };
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${escapeHtml(p.title)}</title>
  <style>
    body { font: 15px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #1a1a1a; }
    .verdict { border-left: 6px solid ${colors[p.verdict]}; padding: .75rem 1rem; background: #f6f6f6; }
    .verdict strong { color: ${colors[p.verdict]}; font-size: 1.3rem; }
    table { border-collapse: collapse; width: 100%; }
    th { text-align: left; vertical-align: top; padding: .3rem 1rem .3rem 0; white-space: nowrap; color: #444; font-weight: 600; }
    td { padding: .3rem 0; word-break: break-all; }
    pre { background: #f6f6f6; padding: .75rem; white-space: pre-wrap; word-break: break-all; }
    code { font-size: .9em; }
    .record { display: flex; flex-wrap: wrap; gap: 0 1.5rem; align-items: flex-start; }
    .record figure { flex: 0 1 16rem; margin: 1.5rem 0 0; }
    .record img { display: block; width: 100%; height: auto; max-height: 30rem; object-fit: contain; border: 1px solid #ddd; }
    .record figcaption { color: #555; font-size: .85em; margin-top: .3rem; }
    .record .facts { flex: 1 1 30rem; min-width: 0; }
  </style>
</head>
<body>
  <h1>${escapeHtml(p.title)}</h1>
  <div class="verdict" id="verdict" data-verdict="${escapeHtml(p.verdict)}">
    <strong>${escapeHtml(p.headline)}</strong>
    <p>${escapeHtml(p.explanation)}</p>
  </div>${p.image ? `
  <div class="record">
    <figure>
      <a href="${escapeHtml(p.image.url)}"><img id="artwork-image" src="${escapeHtml(p.image.url)}" alt="${escapeHtml(p.image.alt)}"></a>
      <figcaption>The image the certificate's <code>image_sha256</code> fingerprints</figcaption>
    </figure>
    <div class="facts">${p.body}
    </div>
  </div>` : p.body}
</body>
</html>
`;
}
