/** The queries of the chain deployment record (table `chain_deployment`, one row). */
import type { Insertable, Selectable } from "kysely";
import type { ChainDeploymentTable, Db } from "../db/database.ts";

export type DeploymentRow = Selectable<ChainDeploymentTable>;
/** The recorded values (the row's id and time aside). */
export type DeploymentValues = Omit<Insertable<ChainDeploymentTable>, "id" | "recorded_at">;

export function findDeployment(db: Db): Promise<DeploymentRow | undefined> {
  return db.selectFrom("chain_deployment").selectAll().where("id", "=", 1).executeTakeFirst();
}

/** Records the deployment, replacing the one recorded before (and its time). */
export async function upsertDeployment(db: Db, values: DeploymentValues): Promise<void> {
  await db
    .insertInto("chain_deployment")
    .values({ id: 1, ...values })
    .onConflict((oc) => oc.column("id").doUpdateSet({ ...values, recorded_at: new Date() }))
    .execute();
}
