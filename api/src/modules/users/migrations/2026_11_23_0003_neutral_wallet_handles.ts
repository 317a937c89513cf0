import { type Kysely, sql } from "kysely";
import { neutralHandle } from "../handles.ts";

/**
 * Wallet users were named after their address (`eth_70997970c5`, display `0x7099…79C8`), so a
 * public profile pointed at a wallet. They get a neutral handle; a display name the user chose stays.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const { rows } = await sql<{ id: string; username: string; display_name: string; wallet_address: string }>`
    select id, username, display_name, wallet_address from users
    where wallet_kind = 'siwe' and lower(username) like 'eth\\_%'`.execute(db);
  for (const user of rows) {
    const address = user.wallet_address;
    const defaultNames = [`eth_${address.slice(2, 12).toLowerCase()}`, `eth_${address.slice(2).toLowerCase()}`];
    if (!defaultNames.includes(user.username.toLowerCase())) continue;
    const defaultDisplay = `${address.slice(0, 6)}…${address.slice(-4)}`;
    for (let renamed = false; !renamed; ) {
      const handle = neutralHandle();
      const result = await sql`
        update users set username = ${handle.username},
          display_name = case when display_name = ${defaultDisplay} then ${handle.display_name} else display_name end
        where id = ${user.id} and not exists (select 1 from users where lower(username) = ${handle.username})`.execute(db);
      renamed = Number(result.numAffectedRows ?? 0) > 0;
    }
  }
}

export async function down(): Promise<void> {
  // The old names are not restored: they exposed the wallet address.
}
