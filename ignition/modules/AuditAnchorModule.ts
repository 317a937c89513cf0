import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";

/** Deploys `AuditAnchor`; parameter `admin` (default: the deployer) gets DEFAULT_ADMIN_ROLE. */
export default buildModule("AuditAnchorModule", (m) => {
  const admin = m.getParameter("admin", m.getAccount(0));
  const auditAnchor = m.contract("AuditAnchor", [admin]);
  return { auditAnchor };
});
