import { randomInt } from "node:crypto";

const ADJECTIVES = [
  "amber", "azure", "bright", "calm", "clever", "cobalt", "crimson", "gentle", "golden", "hazel", "ivory", "jolly", "lively",
  "lucid", "mellow", "misty", "noble", "olive", "quiet", "rosy", "rustic", "silver", "sunny", "swift", "tidy", "vivid", "warm", "witty",
] as const;
const NOUNS = [
  "brush", "canvas", "chisel", "crayon", "easel", "etching", "fresco", "gallery", "glaze", "gouache", "ink", "kiln", "linen", "loom",
  "mosaic", "mural", "palette", "pastel", "pigment", "quill", "sketch", "studio", "tempera", "tint", "umber", "vellum", "vista", "woodcut",
] as const;

const pick = <T>(list: readonly T[]): T => list[randomInt(list.length)]!;

/**
 * A public handle for a user who arrived with a wallet: random words and digits (`amber-easel-4821`),
 * never derived from the address, so that a profile does not point at a wallet.
 */
export function neutralHandle(): { username: string; display_name: string } {
  const words = [pick(ADJECTIVES), pick(NOUNS)];
  const number = String(randomInt(1000, 10_000));
  return {
    username: [...words, number].join("-"),
    display_name: [...words.map((w) => w[0]!.toUpperCase() + w.slice(1)), number].join(" "),
  };
}
