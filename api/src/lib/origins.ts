/**
 * Browser origins as CORS_ORIGINS writes them: an origin (`https://app.example.com`), one with `*`
 * for its port (`http://localhost:*`: any port, or none) or for its leftmost labels
 * (`https://*.example.com`: any subdomain, not the domain itself), or `*` alone for any origin.
 */

const ORIGIN = /^(https?):\/\/(\*\.)?([a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(?::(\d{1,5}|\*))?$/;
const DEFAULT_PORTS: Record<string, string> = { http: "80", https: "443" };

interface OriginParts {
  scheme: string;
  /** Any subdomain of `host` (a rule's `*.`). */
  subdomains: boolean;
  host: string;
  /** `*`: any; "": the scheme's default. */
  port: string;
}

function partsOf(text: string): OriginParts | null {
  const m = ORIGIN.exec(text.toLowerCase());
  if (!m) return null;
  const [, scheme, star, host, port = ""] = m as unknown as [string, string, string | undefined, string, string | undefined];
  // Browsers leave the default port out of an Origin: a rule that names it means the same origin.
  return { scheme, subdomains: star !== undefined, host, port: port === DEFAULT_PORTS[scheme] ? "" : port };
}

/** Whether `rule` is one CORS_ORIGINS can hold. */
export function isOriginRule(rule: string): boolean {
  return rule === "*" || partsOf(rule) !== null;
}

/** A test of an `Origin` header against the rules (each checked with isOriginRule); `null` and malformed origins never pass. */
export function originMatcher(rules: readonly string[]): (origin: string) => boolean {
  const parsed = rules.map((rule) => {
    if (rule === "*") return "*" as const;
    const parts = partsOf(rule);
    if (!parts) throw new Error(`not an origin or an origin pattern: ${rule}`);
    return parts;
  });
  return (origin) => {
    const o = partsOf(origin);
    if (!o || o.subdomains || o.port === "*") return false;
    return parsed.some(
      (r) =>
        r === "*" ||
        (r.scheme === o.scheme && (r.subdomains ? o.host.endsWith(`.${r.host}`) : o.host === r.host) && (r.port === "*" || r.port === o.port)),
    );
  };
}
