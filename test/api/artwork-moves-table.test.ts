/**
 * The table every move on an artwork passes (api/src/modules/artworks/artwork-moves.ts), on its
 * own: what it answers for each state, who may make each move, and that the guide's matrix and the
 * error catalogue's reasons are the table's.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { REFUSAL_REASONS } from "../../api/src/lib/problem-types.ts";
import { ARTWORK_MOVES, ARTWORK_STATES, type ArtworkMove, type ArtworkState, decideMove, type MoveParties } from "../../api/src/modules/artworks/artwork-moves.ts";
import { MOVES_DOC, withMoves } from "../../tools/docs/moves.ts";

const MOVES = Object.keys(ARTWORK_MOVES) as ArtworkMove[];
const STATES = Object.keys(ARTWORK_STATES) as ArtworkState[];
const fact = (state: ArtworkState) => ({ state, detail: `the ${state} detail` });
/** A party every move's rule lets through: the holder (for the holder's moves), no seller (for a buyer's), an admin (for an admin's). */
const allowedParty = (move: ArtworkMove): MoveParties => {
  const by = ARTWORK_MOVES[move].by;
  if (by === "not_seller" || by === "not_holder") return { actor: { role: "collector" }, actorHolds: false, actorSells: false };
  if (by === "admin") return { actor: { role: "admin" }, actorHolds: false, actorSells: false };
  return { actor: { role: "collector" }, actorHolds: true, actorSells: true };
};
/** The states a move needs to be possible at all (a share purchase needs shares). */
const needed = (move: ArtworkMove) => (ARTWORK_MOVES[move].requires ? [fact(ARTWORK_MOVES[move].requires!.state)] : []);

describe("the table of moves on an artwork", () => {
  it("refuses each move in each state exactly as its row says, and allows it where the row is empty", () => {
    for (const move of MOVES) {
      expect(decideMove(move, needed(move), allowedParty(move)), `${move} with nothing hanging off the artwork`).toBeNull();
      for (const state of STATES) {
        const how = ARTWORK_MOVES[move].refusedBy[state];
        const got = decideMove(move, [...needed(move), fact(state)], allowedParty(move));
        if (how === undefined) {
          expect(got, `${move} in ${state}`).toBeNull();
          continue;
        }
        const expected = {
          invalid_state: { status: 409, code: "invalid_state", reason: state },
          conflict: { status: 409, code: "conflict", reason: null },
          not_found: { status: 404, code: "not_found", reason: null },
          no_such_artwork: { status: 400, code: "validation_failed", reason: null },
        }[how];
        const gone = how === "not_found" || how === "no_such_artwork";
        expect(got, `${move} in ${state}`).toMatchObject({ ...expected, pending: gone ? false : ARTWORK_STATES[state].pending === true });
        if (!gone) expect(got!.detail).toBe(`${ARTWORK_MOVES[move].refused}: the ${state} detail`);
      }
    }
  });

  it("answers with the first refusing state in the table's order, whatever order the sources reported them in", () => {
    const both = [fact("withdrawing"), fact("listed")];
    expect(decideMove("fractionalize", both, allowedParty("fractionalize"))?.reason).toBe("listed");
    expect(decideMove("fractionalize", [...both].reverse(), allowedParty("fractionalize"))?.reason).toBe("listed");
  });

  it("checks who makes the move before the states, but a removed artwork is not there for its path's moves", () => {
    const stranger: MoveParties = { actor: { role: "collector" }, actorHolds: false, actorSells: false };
    const admin: MoveParties = { actor: { role: "admin" }, actorHolds: false, actorSells: false };
    expect(decideMove("list", [fact("listed")], stranger)).toMatchObject({ status: 403, code: "forbidden" });
    expect(decideMove("list", [], admin)).toMatchObject({ status: 403 });
    expect(decideMove("fractionalize", [], admin)).toBeNull();
    expect(decideMove("withdraw", [], admin)).toMatchObject({ status: 403 });
    expect(decideMove("remove", [fact("removed")], stranger)).toMatchObject({ status: 404, code: "not_found" });
    expect(decideMove("list", [fact("removed")], stranger)).toMatchObject({ status: 400, code: "validation_failed" });
    expect(decideMove("edit", [fact("removed")], stranger)).toMatchObject({ status: 404, code: "not_found" });
    expect(decideMove("remove", [], stranger)).toMatchObject({ status: 403 });
    expect(decideMove("delist", [], stranger)).toMatchObject({ status: 403 });
    expect(decideMove("delist", [], admin)).toBeNull();
    expect(decideMove("refund", [], stranger)).toMatchObject({ status: 403 });
    // No self-dealing, by account: the seller's own wallet and the holder's own account are refused with their reason.
    const seller: MoveParties = { actor: null, actorHolds: true, actorSells: true };
    for (const move of ["buy", "offer", "fill"] as const) expect(decideMove(move, [], seller)).toMatchObject({ status: 409, code: "invalid_state", reason: "own_listing" });
    expect(decideMove("buy_shares", [fact("shares_issued")], seller)).toMatchObject({ status: 409, reason: "own_artwork" });
    expect(decideMove("buy_shares", [], stranger)).toMatchObject({ status: 409, reason: "not_fractionalized" });
  });

  it("names every reason it can refuse with in the error catalogue", () => {
    const reasons = new Set<string>(["own_listing", "own_artwork"]);
    for (const move of MOVES) {
      const rule = ARTWORK_MOVES[move];
      if (rule.requires) reasons.add(rule.requires.reason);
      for (const [state, how] of Object.entries(rule.refusedBy)) if (how === "invalid_state") reasons.add(state);
    }
    expect([...reasons].filter((r) => !REFUSAL_REASONS.includes(r))).toEqual([]);
  });

  it("is the matrix of the ownership guide (`npm run openapi` writes it)", () => {
    const committed = readFileSync(new URL(`../../${MOVES_DOC}`, import.meta.url), "utf8");
    expect(committed === withMoves(committed), `${MOVES_DOC}'s moves section is stale: run \`npm run openapi\``).toBe(true);
  });
});
