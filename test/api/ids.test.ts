import { describe, expect, it } from "vitest";
import { isId, newId } from "../../api/src/lib/ids.ts";

describe("newId", () => {
  it("gives distinct, well-formed ids that sort in the order they were made, many in one millisecond", () => {
    const ids = Array.from({ length: 10_000 }, () => newId("artwork"));
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => isId("artwork", id))).toBe(true);
    expect([...ids].sort()).toEqual(ids);
  });

  it("draws a fresh random part in each millisecond, every Crockford character about equally often", async () => {
    // The first id of each millisecond has a newly drawn random part (later ones in the same
    // millisecond increment it): 200 of them are 3,200 characters, 100 of each of the 32 expected.
    const fresh: string[] = [];
    while (fresh.length < 200) {
      const started = Date.now();
      while (Date.now() === started);
      fresh.push(newId("post").slice("pst_".length + 10));
    }
    expect(new Set(fresh).size).toBe(fresh.length);
    const counts = new Map<string, number>();
    for (const char of fresh.join("")) counts.set(char, (counts.get(char) ?? 0) + 1);
    expect([...counts.keys()].sort().join("")).toBe("0123456789ABCDEFGHJKMNPQRSTVWXYZ");
    // Binomial(3200, 1/32): mean 100, standard deviation about 9.8; a bias of a byte source mapped
    // badly (e.g. one character twice as likely) lands far outside 50..150.
    for (const n of counts.values()) {
      expect(n).toBeGreaterThan(50);
      expect(n).toBeLessThan(150);
    }
  });
});
