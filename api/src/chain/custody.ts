import { mnemonicToSeedSync, validateMnemonic } from "@scure/bip39";
import { wordlist } from "@scure/bip39/wordlists/english";
import { getAddress } from "viem";
import { HDKey, hdKeyToAccount } from "viem/accounts";

/**
 * Users' custodial addresses: account `index` of the platform HD wallet (BIP-44 m/44'/60'/0'/0/index).
 * The seed is derived once; each address costs one child derivation.
 */
export class CustodyWallet {
  private readonly root: HDKey;

  constructor(mnemonic: string) {
    const normalized = mnemonic.trim().split(/\s+/).join(" ");
    if (!validateMnemonic(normalized, wordlist)) throw new Error("CUSTODY_MNEMONIC is not a valid BIP-39 English mnemonic");
    this.root = HDKey.fromMasterSeed(mnemonicToSeedSync(normalized));
  }

  addressAt(index: number): `0x${string}` {
    return getAddress(hdKeyToAccount(this.root, { addressIndex: index }).address);
  }

  /** The signing account of `index`, for transactions users authorize on their custodial wallet. */
  accountAt(index: number) {
    return hdKeyToAccount(this.root, { addressIndex: index });
  }
}
