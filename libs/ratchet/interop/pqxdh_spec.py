"""PQXDH written from Signal's PQXDH specification (revision 1, 2023-05-24), for libs/ratchet's
interop tests. Independent of libs/ratchet's code: ML-KEM-1024 is kyber-py 1.2.0 (pure Python,
FIPS 203), X25519 and HKDF-SHA256 are `cryptography`'s, XEdDSA is libxeddsa (XEdDSA 1.2.0). The
wire encodings (bundle type 0x05, initial message type 0x04) follow docs/ratchet.md.

Parameters (spec section 2.1) as docs/ratchet.md chooses them:
  curve = curve25519, hash = SHA-256, info = "XousChat_CURVE25519_SHA-256_ML-KEM-1024",
  pqkem = ML-KEM-1024, EncodeEC(PK) = 0x05 || u, EncodeKEM(PK) = 0x0a || ek.
"""

import os

import xeddsa
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from kyber_py.ml_kem import ML_KEM_1024

INFO = b"XousChat_CURVE25519_SHA-256_ML-KEM-1024"
TYPE_PQ_PREKEY = 0x04
TYPE_PQ_BUNDLE = 0x05
EK_LEN = 1568
CT_LEN = 1568


class PQXDHError(Exception):
    pass


def encode_ec(pk):
    return b"\x05" + pk


def encode_kem(pk):
    return b"\x0a" + pk


def x25519_pub(priv):
    return X25519PrivateKey.from_private_bytes(priv).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )


def dh(priv, pub):
    # cryptography raises on an all-zero output (a low-order peer key)
    return X25519PrivateKey.from_private_bytes(priv).exchange(X25519PublicKey.from_public_bytes(pub))


def kdf(km):
    """Section 2.2: HKDF with F = 32 0xFF bytes prepended, a zero salt of the hash length, info."""
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=b"\x00" * 32, info=INFO).derive(b"\xff" * 32 + km)


def sign(identity_priv, message):
    priv = xeddsa.priv_force_sign(identity_priv, False)
    return xeddsa.ed25519_priv_sign(priv, message, os.urandom(64))


def verify(identity_pub, message, sig):
    return xeddsa.ed25519_verify(sig, xeddsa.curve25519_pub_to_ed25519_pub(identity_pub, False), message)


class Bob:
    """Section 3.2: identity key, signed curve prekey, signed last-resort PQ prekey, one-time curve
    prekeys and signed one-time PQ prekeys (PQ prekeys named by u32 identifiers)."""

    def __init__(self, identity_priv, opks, pq_opks):
        self.ik = identity_priv
        self.spk = os.urandom(32)
        self.spk_sig = sign(self.ik, encode_ec(x25519_pub(self.spk)))
        self.opks = {}
        for _ in range(opks):
            k = os.urandom(32)
            self.opks[x25519_pub(k)] = k
        self.next_id = 100
        self.last_resort = self._pq_prekey()
        self.pq_opks = {}
        for _ in range(pq_opks):
            k = self._pq_prekey()
            self.pq_opks[k["id"]] = k

    def _pq_prekey(self):
        ek, dk = ML_KEM_1024.keygen()
        k = {"id": self.next_id, "ek": ek, "dk": dk, "sig": sign(self.ik, encode_kem(ek))}
        self.next_id += 1
        return k

    def bundle(self):
        """Section 3.3's bundle, one one-time curve prekey and one PQ prekey (one-time first)."""
        opk = next(iter(self.opks), None)
        pq, one_time = (next(iter(self.pq_opks.values())), True) if self.pq_opks else (self.last_resort, False)
        flags = (1 if opk else 0) | 2 | (4 if one_time else 0)
        out = bytes([TYPE_PQ_BUNDLE, flags]) + x25519_pub(self.ik) + x25519_pub(self.spk) + self.spk_sig
        out += opk or b""
        out += pq["id"].to_bytes(4, "big") + pq["ek"] + pq["sig"]
        return out

    def receive(self, wire):
        """Section 3.4: returns (SK, AD, SPK private key, the ratchet message). One-time keys
        used are deleted only by `consume` (after the first message decrypted)."""
        if len(wire) < 2 or wire[0] != TYPE_PQ_PREKEY or wire[1] & ~3:
            raise PQXDHError("not a PQXDH initial message")
        n = 4 if wire[1] & 1 else 3
        keys = [wire[2 + 32 * i : 34 + 32 * i] for i in range(n)]
        at = 2 + 32 * n
        pq_id = int.from_bytes(wire[at : at + 4], "big")
        ct = wire[at + 4 : at + 4 + CT_LEN]
        if len(ct) != CT_LEN:
            raise PQXDHError("truncated")
        ik_a, ek_a, spk_b = keys[0], keys[1], keys[2]
        if spk_b != x25519_pub(self.spk):
            raise PQXDHError("unknown signed prekey")
        opk = None
        if n == 4:
            opk = self.opks.get(keys[3])
            if opk is None:
                raise PQXDHError("unknown one-time prekey")
        if wire[1] & 2:
            pq = self.pq_opks.get(pq_id)
            if pq is None:
                raise PQXDHError("unknown one-time PQ prekey")
        else:
            if pq_id != self.last_resort["id"]:
                raise PQXDHError("unknown last-resort PQ prekey")
            pq = self.last_resort
        ss = ML_KEM_1024.decaps(pq["dk"], ct)
        dh1 = dh(self.spk, ik_a)
        dh2 = dh(self.ik, ek_a)
        dh3 = dh(self.spk, ek_a)
        km = dh1 + dh2 + dh3 + (dh(opk, ek_a) if opk else b"") + ss
        sk = kdf(km)
        ad = encode_ec(ik_a) + encode_ec(x25519_pub(self.ik))
        used = (keys[3] if n == 4 else None, pq_id if wire[1] & 2 else None)
        return sk, ad, self.spk, wire[at + 4 + CT_LEN :], used

    def consume(self, used):
        opk, pq_id = used
        if opk is not None:
            del self.opks[opk]
        if pq_id is not None:
            del self.pq_opks[pq_id]


def parse_bundle(b):
    if len(b) < 2 or b[0] != TYPE_PQ_BUNDLE or b[1] & ~7:
        raise PQXDHError("not a PQXDH bundle")
    flags = b[1]
    ik, spk, spk_sig = b[2:34], b[34:66], b[66:130]
    at = 130
    opk = None
    if flags & 1:
        opk, at = b[at : at + 32], at + 32
    if not flags & 2:
        # Policy (as Signal's clients): PQXDH needs a PQ prekey.
        raise PQXDHError("bundle without a PQ prekey")
    pq_id = int.from_bytes(b[at : at + 4], "big")
    ek = b[at + 4 : at + 4 + EK_LEN]
    sig = b[at + 4 + EK_LEN : at + 4 + EK_LEN + 64]
    if len(sig) != 64 or len(b) != at + 4 + EK_LEN + 64:
        raise PQXDHError("bad bundle length")
    return dict(ik=ik, spk=spk, spk_sig=spk_sig, opk=opk, pq_id=pq_id, pq_one_time=bool(flags & 4), pq_ek=ek, pq_sig=sig)


def alice(identity_priv, bundle_bytes):
    """Section 3.3: verify both signatures, encapsulate, DH1..DH4, SK, AD. Returns (SK, AD, the
    initial message's PQXDH header, SPK_B (the responder's first ratchet key))."""
    b = parse_bundle(bundle_bytes)
    if not verify(b["ik"], encode_ec(b["spk"]), b["spk_sig"]):
        raise PQXDHError("signed prekey signature does not verify")
    if not verify(b["ik"], encode_kem(b["pq_ek"]), b["pq_sig"]):
        raise PQXDHError("PQ prekey signature does not verify")
    ek_priv = os.urandom(32)
    ss, ct = ML_KEM_1024.encaps(b["pq_ek"])
    dh1 = dh(identity_priv, b["spk"])
    dh2 = dh(ek_priv, b["ik"])
    dh3 = dh(ek_priv, b["spk"])
    km = dh1 + dh2 + dh3 + (dh(ek_priv, b["opk"]) if b["opk"] else b"") + ss
    sk = kdf(km)
    ik_a = x25519_pub(identity_priv)
    ad = encode_ec(ik_a) + encode_ec(b["ik"])
    flags = (1 if b["opk"] else 0) | (2 if b["pq_one_time"] else 0)
    header = bytes([TYPE_PQ_PREKEY, flags]) + ik_a + x25519_pub(ek_priv) + b["spk"] + (b["opk"] or b"")
    header += b["pq_id"].to_bytes(4, "big") + ct
    return sk, ad, header, b["spk"]
