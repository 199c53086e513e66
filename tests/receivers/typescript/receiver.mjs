#!/usr/bin/env node
// A service that receives countersign proofs and checks them itself, with the
// `paseto` npm package (pinned in package.json and package-lock.json).
//
// Usage:
//   node receiver.mjs --keys KEYSET.json --audience AUD --operation OP \
//                     --arguments FILE [--nonces DIR] < proof
//
// The proof is read from stdin, never from the command line (it is a secret),
// and is never printed. --arguments holds the canonical arguments exactly as
// received (countersign sends the RFC 8785 text the proof's `args_sha256`
// hashes). --nonces is this receiver's own table of used proofs: one file per
// `jti`, created exclusively, so two deliveries of one proof cannot both win;
// without it, an in-memory set that lasts one invocation.
//
// Checks: the key (pinned key set, active keys only; the set's ids are
// trusted as the file is, this package has no v4 key-id function), the
// signature, expiry and not-before, the issuer and the audience (the paseto
// package, which checks time before audience), then the operation and the
// SHA-256 of the arguments received and the optional passkey claims, then
// single use. Prints one JSON verdict:
//   {"ok": true, "jti": ..., "proposal_id": ..., "key_id": ...}       exit 0
//   {"ok": false, "reason": <countersign refusal code, or "replayed">} exit 3
// An accepted proof whose signer checked a passkey also carries
//   "passkey": {"amr": ["passkey-uv"], "pkh": <SHA-256 hex of the credential id>}
// in its verdict; the optional claims `amr` and `pkh` come together or not at
// all, `amr` non-empty, without duplicates, each method known (only
// "passkey-uv" today), `pkh` 64 lowercase hex digits; anything else is
// refused as "malformed", as countersign refuses it.

import { createHash, timingSafeEqual } from 'node:crypto'
import { mkdirSync, openSync, closeSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'

import { InspectFooter, PublicProtocol } from 'paseto'
import { ImportPublicKeyFactory, VerifyFactory } from 'paseto/v4/public'

const ISSUER = 'countersign-signer'
// The authentication methods a proof's `amr` may name (countersign's AuthMethod).
const KNOWN_AMR = ['passkey-uv']
const v4 = new PublicProtocol(ImportPublicKeyFactory, VerifyFactory)

class Refused extends Error {}

function same(a, b) {
  const x = Buffer.from(String(a))
  const y = Buffer.from(String(b))
  return x.length === y.length && timingSafeEqual(x, y)
}

async function loadKeySet(path) {
  const doc = JSON.parse(readFileSync(path, 'utf8'))
  if (doc.version !== 1 || doc.issuer !== ISSUER) {
    throw new Error(`${path}: not a version 1 countersign key set`)
  }
  const keys = new Map()
  for (const entry of doc.keys) {
    if (entry.status === 'active' || entry.status === 'verifying') keys.set(entry.id, await v4.ImportPublicKey(entry.paserk))
  }
  return keys
}

function footerKid(token) {
  try {
    const footer = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(InspectFooter(token)))
    if (typeof footer !== 'object' || footer === null || Object.keys(footer).join() !== 'kid') {
      throw new Refused('malformed')
    }
    return footer.kid
  } catch (e) {
    throw e instanceof Refused ? e : new Refused('malformed')
  }
}

// The proof's optional passkey claims, { amr, pkh }, or null.
function passkeyAssurance(claims) {
  const present = ['amr', 'pkh'].filter((name) => Object.hasOwn(claims, name))
  if (present.length === 0) return null
  const { amr, pkh } = claims
  const valid =
    present.length === 2 &&
    Array.isArray(amr) &&
    amr.length > 0 &&
    amr.every((m) => typeof m === 'string' && KNOWN_AMR.includes(m)) &&
    new Set(amr).size === amr.length &&
    typeof pkh === 'string' &&
    /^[0-9a-f]{64}$/.test(pkh)
  if (!valid) throw new Refused('malformed')
  return { amr, pkh }
}

const CLAIM_REFUSALS = { exp: 'expired', nbf: 'not_yet_valid', aud: 'wrong_audience' }

async function check(token, keys, expect, nonces) {
  const kid = footerKid(token)
  const key = keys.get(kid)
  if (key === undefined) throw new Refused('unknown_key_id')
  let claims
  try {
    ;({ claims } = await v4.Verify(key, token, { audience: expect.audience, issuer: ISSUER }))
  } catch (e) {
    if (e.code === 'ERR_PASETO_CLAIM_VALIDATION') {
      throw new Refused(CLAIM_REFUSALS[e.claim] ?? 'malformed')
    }
    if (e.code === 'ERR_PASETO_INVALID_TOKEN' && /signature/.test(e.message)) {
      throw new Refused('bad_signature')
    }
    throw new Refused('malformed')
  }
  if (!same(claims.op, expect.operation)) throw new Refused('operation_mismatch')
  if (!same(claims.args_sha256, expect.argumentsSha256)) throw new Refused('arguments_mismatch')
  const passkey = passkeyAssurance(claims)
  // Single use, last: only a proof that passed every check is consumed.
  if (!nonces.claim(claims.jti)) throw new Refused('replayed')
  return { claims, kid, passkey }
}

function nonceTable(dir) {
  if (dir === undefined) {
    const used = new Set()
    return { claim: (jti) => !used.has(jti) && used.add(jti) !== undefined }
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  return {
    claim(jti) {
      if (!/^[A-Za-z0-9_-]{43}$/.test(jti)) throw new Refused('malformed')
      try {
        closeSync(openSync(join(dir, jti), 'wx', 0o600))
        return true
      } catch (e) {
        if (e.code === 'EEXIST') return false
        throw e
      }
    },
  }
}

async function main() {
  const { values } = parseArgs({
    options: {
      keys: { type: 'string' },
      audience: { type: 'string' },
      operation: { type: 'string' },
      arguments: { type: 'string' },
      nonces: { type: 'string' },
    },
  })
  for (const name of ['keys', 'audience', 'operation', 'arguments']) {
    if (values[name] === undefined) {
      console.error(`usage: receiver.mjs --${name} is required`)
      return 2
    }
  }
  const keys = await loadKeySet(values.keys)
  const expect = {
    audience: values.audience,
    operation: values.operation,
    argumentsSha256: createHash('sha256').update(readFileSync(values.arguments)).digest('hex'),
  }
  const token = readFileSync(0, 'utf8').trim()
  try {
    const { claims, kid, passkey } = await check(token, keys, expect, nonceTable(values.nonces))
    const verdict = { ok: true, jti: claims.jti, proposal_id: claims.pid, key_id: kid }
    if (passkey !== null) verdict.passkey = passkey
    console.log(JSON.stringify(verdict))
    return 0
  } catch (e) {
    if (!(e instanceof Refused)) throw e
    console.log(JSON.stringify({ ok: false, reason: e.message }))
    return 3
  }
}

process.exitCode = await main()
