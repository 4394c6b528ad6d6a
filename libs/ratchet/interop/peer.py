#!/usr/bin/env python3
"""Independent X3DH + Double Ratchet peer for libs/ratchet's interop tests.

Runs PyPI DoubleRatchet 1.3.0 and x3dh 1.3.0 (Syndace), configured to the parameters of
libs/ratchet (docs/ratchet.md), and speaks libs/ratchet's wire format. The wire format is
re-implemented here from the docs; all cryptography is the Python packages'.

Protocol: one JSON object per line on stdin, one JSON reply per line on stdout:
  request  {"op": NAME, ...}   (bytes as lowercase hex)
  reply    {"ok": true, ...} or {"ok": false, "error": "ExceptionClass: message"}

Ops:
  privs        {privs: [hex32...]}  queue ratchet private keys for _generate_priv (injection)
  dr_alice     {id, sk, other_pub, ad, pt}       -> {wire}   encrypt_initial_message
  dr_bob       {id, sk, own_priv, ad, wire}      -> {pt}     decrypt_initial_message
  encrypt      {id, pt}                          -> {wire}
  encrypt_n    {id, pt, n}                       -> {wires}  n messages with the same plaintext
  decrypt      {id, wire}                        -> {pt}
  x3dh_new     {id, identity_priv}               -> {identity_key, signed_pre_key, signature, pre_keys}
  x3dh_active  {id, sess, bundle{...}, pt}       -> {wire, sk, ad}   X3DH as initiator + first message
  x3dh_passive {id, sess, wire}                  -> {pt, sk, ad}     X3DH as responder + first message
  xeddsa_sign  {priv, msg, nonce}                -> {sig}
  pq_bob_new   {id, identity_priv, opks, pq_opks} -> {bundle}   PQXDH responder keys (pqxdh_spec.py)
  pq_bundle    {id}                              -> {bundle}
  pq_alice     {id, sess, identity_priv, bundle, pt} -> {wire, sk, ad}   PQXDH as initiator + first message
  pq_accept    {id, sess, wire}                  -> {pt, sk, ad}     PQXDH as responder + first message
  quit

PQXDH (pqxdh_spec.py) is written from Signal's PQXDH specification with kyber-py's ML-KEM-1024
and `cryptography`; the Double Ratchet after it is DoubleRatchet 1.3.0 as above.
"""

import argparse
import asyncio
import collections
import json
import secrets
import sys

import os

import doubleratchet
import x3dh
import xeddsa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pqxdh_spec  # noqa: E402
from doubleratchet.recommended import (
    HashFunction,
    aead_aes_hmac,
    diffie_hellman_ratchet_curve25519,
    kdf_hkdf,
    kdf_separate_hmacs,
)

# The parameters of libs/ratchet (libs/ratchet/src/kdf.rs, session.rs, wire.rs).
ROOT_INFO = b"XousChat Root"
MESSAGE_INFO = b"XousChat Message"
X3DH_INFO = b"XousChat X3DH"
MAX_SKIP = 1000
MAX_STORED_KEYS = 2000
TYPE_RATCHET = 0x01
TYPE_PREKEY = 0x02

PRIV_QUEUE = collections.deque()


class RootKDF(kdf_hkdf.KDF):
    @staticmethod
    def _get_hash_function():
        return HashFunction.SHA_256

    @staticmethod
    def _get_info():
        return ROOT_INFO


class MessageKDF(kdf_separate_hmacs.KDF):
    @staticmethod
    def _get_hash_function():
        return HashFunction.SHA_256


class AEAD(aead_aes_hmac.AEAD):
    @staticmethod
    def _get_hash_function():
        return HashFunction.SHA_256

    @staticmethod
    def _get_info():
        return MESSAGE_INFO


class DHRatchet(diffie_hellman_ratchet_curve25519.DiffieHellmanRatchet):
    @staticmethod
    def _generate_priv():
        if PRIV_QUEUE:
            return PRIV_QUEUE.popleft()
        return diffie_hellman_ratchet_curve25519.DiffieHellmanRatchet._generate_priv()


def encode_header(h):
    return (
        bytes([TYPE_RATCHET])
        + h.ratchet_pub
        + h.previous_sending_chain_length.to_bytes(4, "big")
        + h.sending_chain_length.to_bytes(4, "big")
    )


class DoubleRatchet(doubleratchet.DoubleRatchet):
    @staticmethod
    def _build_associated_data(associated_data, header):
        return associated_data + encode_header(header)


DR_PARAMS = dict(
    diffie_hellman_ratchet_class=DHRatchet,
    root_chain_kdf=RootKDF,
    message_chain_kdf=MessageKDF,
    message_chain_constant=b"\x02\x01",
    dos_protection_threshold=MAX_SKIP,
    max_num_skipped_message_keys=MAX_STORED_KEYS,
    aead=AEAD,
)


def encode_message(m):
    return encode_header(m.header) + m.ciphertext


def decode_message(b):
    if len(b) < 41 + 16 + 32 or b[0] != TYPE_RATCHET:
        raise ValueError("not a ratchet message")
    header = doubleratchet.Header(
        ratchet_pub=b[1:33],
        previous_sending_chain_length=int.from_bytes(b[33:37], "big"),
        sending_chain_length=int.from_bytes(b[37:41], "big"),
    )
    return doubleratchet.EncryptedMessage(header=header, ciphertext=b[41:])


def encode_prekey(h, message_wire):
    return (
        bytes([TYPE_PREKEY, 1 if h.pre_key is not None else 0])
        + h.identity_key
        + h.ephemeral_key
        + h.signed_pre_key
        + (h.pre_key or b"")
        + message_wire
    )


def decode_prekey(b):
    if len(b) < 2 or b[0] != TYPE_PREKEY or b[1] & ~1:
        raise ValueError("not a prekey message")
    n = 4 if b[1] & 1 else 3
    keys = [b[2 + 32 * i : 2 + 32 * (i + 1)] for i in range(n)]
    header = x3dh.Header(
        identity_key=keys[0],
        ephemeral_key=keys[1],
        signed_pre_key=keys[2],
        pre_key=keys[3] if n == 4 else None,
    )
    return header, b[2 + 32 * n :]


class X3DHState(x3dh.State):
    @staticmethod
    def _encode_public_key(key_format, pub):
        # Encode(PK) = 0x05 || u, as libs/ratchet (X25519 identity keys only).
        if key_format is not x3dh.IdentityKeyFormat.CURVE_25519:
            raise ValueError("libs/ratchet uses Curve25519 identity keys")
        return b"\x05" + pub

    def _publish_bundle(self, bundle):
        pass


def new_x3dh_state(identity_priv):
    from x3dh.identity_key_pair import IdentityKeyPairPriv

    return X3DHState.create(
        x3dh.IdentityKeyFormat.CURVE_25519,
        x3dh.HashFunction.SHA_256,
        X3DH_INFO,
        IdentityKeyPairPriv(identity_priv),
        pre_key_refill_threshold=1,
        pre_key_refill_target=2,
    )


SESSIONS = {}
PREKEY_HEADERS = {}
X3DH_STATES = {}
PQ_BOBS = {}


def h(b):
    return b.hex()


def u(s):
    return bytes.fromhex(s)


async def handle(req):
    op = req["op"]
    if op == "privs":
        PRIV_QUEUE.extend(u(p) for p in req["privs"])
        return {}
    if op == "dr_alice":
        dr, msg = await DoubleRatchet.encrypt_initial_message(
            shared_secret=u(req["sk"]),
            recipient_ratchet_pub=u(req["other_pub"]),
            message=u(req["pt"]),
            associated_data=u(req["ad"]),
            **DR_PARAMS,
        )
        SESSIONS[req["id"]] = (dr, u(req["ad"]))
        return {"wire": h(encode_message(msg))}
    if op == "dr_bob":
        dr, pt = await DoubleRatchet.decrypt_initial_message(
            shared_secret=u(req["sk"]),
            own_ratchet_priv=u(req["own_priv"]),
            message=decode_message(u(req["wire"])),
            associated_data=u(req["ad"]),
            **DR_PARAMS,
        )
        SESSIONS[req["id"]] = (dr, u(req["ad"]))
        return {"pt": h(pt)}
    if op == "encrypt":
        dr, ad = SESSIONS[req["id"]]
        return {"wire": h(encode_message(await dr.encrypt_message(u(req["pt"]), ad)))}
    if op == "encrypt_n":
        dr, ad = SESSIONS[req["id"]]
        return {"wires": [h(encode_message(await dr.encrypt_message(u(req["pt"]), ad))) for _ in range(req["n"])]}
    if op == "decrypt":
        dr, ad = SESSIONS[req["id"]]
        wire = u(req["wire"])
        if wire[:1] == bytes([TYPE_PREKEY]):
            # The initiator repeats the X3DH header until it hears back: it must be this session's.
            header, wire = decode_prekey(wire)
            if PREKEY_HEADERS.get(req["id"]) != header:
                raise ValueError("prekey message of another session")
        elif wire[:1] == bytes([pqxdh_spec.TYPE_PQ_PREKEY]) and len(wire) > 1:
            # The same for PQXDH: the whole PQXDH header must be the one that started the session.
            n = 2 + 32 * (4 if wire[1] & 1 else 3) + 4 + pqxdh_spec.CT_LEN
            if PREKEY_HEADERS.get(req["id"]) != wire[:n]:
                raise ValueError("PQXDH prekey message of another session")
            wire = wire[n:]
        return {"pt": h(await dr.decrypt_message(decode_message(wire), ad))}
    if op == "x3dh_new":
        st = new_x3dh_state(u(req["identity_priv"]))
        X3DH_STATES[req["id"]] = st
        b = st.bundle
        return {
            "identity_key": h(b.identity_key),
            "signed_pre_key": h(b.signed_pre_key),
            "signature": h(b.signed_pre_key_sig),
            "pre_keys": sorted(h(p) for p in b.pre_keys),
        }
    if op == "x3dh_active":
        st = X3DH_STATES[req["id"]]
        bd = req["bundle"]
        bundle = x3dh.Bundle(
            identity_key=u(bd["identity_key"]),
            signed_pre_key=u(bd["signed_pre_key"]),
            signed_pre_key_sig=u(bd["signature"]),
            pre_keys=frozenset(u(p) for p in bd["pre_keys"]),
        )
        sk, ad, header = await st.get_shared_secret_active(bundle, require_pre_key=bool(bd["pre_keys"]))
        dr, msg = await DoubleRatchet.encrypt_initial_message(
            shared_secret=sk,
            recipient_ratchet_pub=header.signed_pre_key,
            message=u(req["pt"]),
            associated_data=ad,
            **DR_PARAMS,
        )
        SESSIONS[req["sess"]] = (dr, ad)
        return {"wire": h(encode_prekey(header, encode_message(msg))), "sk": h(sk), "ad": h(ad)}
    if op == "x3dh_passive":
        st = X3DH_STATES[req["id"]]
        header, rest = decode_prekey(u(req["wire"]))
        sk, ad, spk = await st.get_shared_secret_passive(header, require_pre_key=False)
        dr, pt = await DoubleRatchet.decrypt_initial_message(
            shared_secret=sk,
            own_ratchet_priv=spk.priv,
            message=decode_message(rest),
            associated_data=ad,
            **DR_PARAMS,
        )
        SESSIONS[req["sess"]] = (dr, ad)
        PREKEY_HEADERS[req["sess"]] = header
        return {"pt": h(pt), "sk": h(sk), "ad": h(ad)}
    if op == "pq_bob_new":
        PQ_BOBS[req["id"]] = pqxdh_spec.Bob(u(req["identity_priv"]), req["opks"], req["pq_opks"])
        return {"bundle": h(PQ_BOBS[req["id"]].bundle())}
    if op == "pq_bundle":
        return {"bundle": h(PQ_BOBS[req["id"]].bundle())}
    if op == "pq_alice":
        sk, ad, header, spk = pqxdh_spec.alice(u(req["identity_priv"]), u(req["bundle"]))
        dr, msg = await DoubleRatchet.encrypt_initial_message(
            shared_secret=sk,
            recipient_ratchet_pub=spk,
            message=u(req["pt"]),
            associated_data=ad,
            **DR_PARAMS,
        )
        SESSIONS[req["sess"]] = (dr, ad)
        return {"wire": h(header + encode_message(msg)), "sk": h(sk), "ad": h(ad)}
    if op == "pq_accept":
        bob = PQ_BOBS[req["id"]]
        sk, ad, spk_priv, rest, used = bob.receive(u(req["wire"]))
        dr, pt = await DoubleRatchet.decrypt_initial_message(
            shared_secret=sk,
            own_ratchet_priv=spk_priv,
            message=decode_message(rest),
            associated_data=ad,
            **DR_PARAMS,
        )
        bob.consume(used)  # one-time prekeys go only after the first message decrypted
        SESSIONS[req["sess"]] = (dr, ad)
        PREKEY_HEADERS[req["sess"]] = u(req["wire"])[: len(u(req["wire"])) - len(rest)]
        return {"pt": h(pt), "sk": h(sk), "ad": h(ad)}
    if op == "xeddsa_sign":
        priv = xeddsa.priv_force_sign(u(req["priv"]), False)
        return {"sig": h(xeddsa.ed25519_priv_sign(priv, u(req["msg"]), u(req["nonce"])))}
    if op == "versions":
        import importlib.metadata as md

        return {
            "DoubleRatchet": doubleratchet.__version__,
            "x3dh": x3dh.__version__,
            "xeddsa": xeddsa.__version__,
            "kyber-py": md.version("kyber-py"),
            "cryptography": md.version("cryptography"),
        }
    raise ValueError(f"unknown op {op!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.parse_args()
    import warnings

    warnings.simplefilter("ignore")
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        if req.get("op") == "quit":
            break
        try:
            rep = asyncio.run(handle(req))
            rep["ok"] = True
        except Exception as e:  # reported to the Rust side, which decides
            rep = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(rep) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
