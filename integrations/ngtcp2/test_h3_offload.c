/* SPDX-License-Identifier: Apache-2.0 */
/* The seam of qo-h3-server (h3_offload.c) without a connection: the null
 * AEAD, the PN taken from the nonce, the per-batch protect and unprotect,
 * and the refusals that keep plaintext off the wire. TAP output. */
#include <stdio.h>
#include <string.h>

#include <gnutls/gnutls.h>

#include "h3_offload.h"

static int failures, count;

static void ok(int cond, const char *what)
{
    count++;
    printf("%sok %d - %s\n", cond ? "" : "not ", count, what);
    if (!cond)
        failures++;
}

#define CID 8

/* A 1-RTT packet as ngtcp2 writes it before sealing: short header
 * (fixed bit, key phase kp, 4-byte PN) with the client's CID. */
static size_t short_header(uint8_t *p, const uint8_t *cid, int kp, uint32_t pn)
{
    p[0] = (uint8_t)(0x40 | (kp << 2) | 0x03);
    memcpy(p + 1, cid, CID);
    p[1 + CID] = (uint8_t)(pn >> 24);
    p[2 + CID] = (uint8_t)(pn >> 16);
    p[3 + CID] = (uint8_t)(pn >> 8);
    p[4 + CID] = (uint8_t)pn;
    return 5 + CID;
}

/* RFC 9001 §5.3: the IV with the packet number XORed into its low bytes */
static void make_nonce(uint8_t *nonce, const uint8_t *iv, uint64_t pn)
{
    memcpy(nonce, iv, QUICOFF_IV_LEN);
    for (int i = 0; i < 8; i++)
        nonce[11 - i] ^= (uint8_t)(pn >> (8 * i));
}

int main(void)
{
    struct qo_offload o;
    ok(qo_offload_init(&o, QO_OFFLOAD_INPROC, CID) == 0, "inproc table and worker");
    qo_offload_set_current(&o);

    /* One secret for both directions and one CID for both ends: the RX
     * entry opens what the TX entry sealed (a loop through the library). */
    uint8_t secret[32], iv[QUICOFF_IV_LEN];
    for (int i = 0; i < 32; i++)
        secret[i] = (uint8_t)(i * 7 + 1);
    struct quicoff_packet_keys k;
    quicoff_derive_packet_keys(QUICOFF_AES_128_GCM, secret, 32, QUICOFF_VERSION_1, &k);
    memcpy(iv, k.iv, sizeof(iv));
    ngtcp2_cid cid = {.datalen = CID};
    memset(cid.data, 0xc1, CID);
    ok(qo_offload_install(&o, GNUTLS_CIPHER_AES_128_GCM, QUICOFF_VERSION_1, secret, secret, 32, iv,
                          &cid, &cid) == 0 &&
           o.active,
       "install at the 1-RTT secrets");

    /* ngtcp2's encrypt for packet number 0x1234 of key phase 0 */
    uint8_t dgram[1500], payload[100], nonce[QUICOFF_IV_LEN];
    for (size_t i = 0; i < sizeof(payload); i++)
        payload[i] = (uint8_t)i;
    uint64_t pn = 0x1234;
    make_nonce(nonce, iv, pn);
    qo_offload_tx_begin(&o);
    size_t hl = short_header(dgram, cid.data, 0, (uint32_t)pn);
    memcpy(dgram + hl, payload, sizeof(payload));
    int rv = qo_offload_encrypt(dgram + hl, NULL, NULL, dgram + hl, sizeof(payload), nonce,
                                sizeof(nonce), dgram, hl);
    uint8_t zeros[QUICOFF_TAG_LEN] = {0};
    ok(rv == 0 && memcmp(dgram + hl, payload, sizeof(payload)) == 0 &&
           memcmp(dgram + hl + sizeof(payload), zeros, sizeof(zeros)) == 0,
       "null AEAD: the payload in plaintext and 16 zero bytes");
    ok(o.tx_pending && o.tx_pn == pn, "the full PN is nonce ^ IV");
    uint8_t mask[NGTCP2_HP_MASKLEN] = {1, 1, 1, 1, 1};
    ngtcp2_crypto_cipher_ctx hp_ctx = {.native_handle = &hp_ctx};
    ok(qo_offload_hp_mask(mask, NULL, &hp_ctx, dgram + hl + 4) == 0 &&
           memcmp(mask, zeros, sizeof(mask)) == 0,
       "zero header-protection mask for the packet just sealed");

    struct qo_tx_batch b = {0};
    size_t len = hl + sizeof(payload) + QUICOFF_TAG_LEN;
    qo_offload_tx_end(&o, &b, dgram, len);
    qo_offload_protect(&o, &b);
    ok(b.n == 1 && b.ok[0] && b.short_off[0] == 0, "protected in a burst");
    ok(memcmp(dgram + hl, payload, 16) != 0, "no plaintext left in the datagram");

    /* a 1-RTT packet whose nonce is not IV ^ PN is refused, never guessed */
    uint8_t bad[QUICOFF_IV_LEN];
    memcpy(bad, nonce, sizeof(bad));
    bad[0] ^= 0x80;
    uint8_t other[200];
    size_t ohl = short_header(other, cid.data, 0, 7);
    qo_offload_tx_begin(&o);
    ok(qo_offload_encrypt(other + ohl, NULL, NULL, payload, sizeof(payload), bad, sizeof(bad),
                          other, ohl) == NGTCP2_ERR_CALLBACK_FAILURE,
       "a nonce that is not IV ^ PN is refused");

    /* a sealed packet whose header is not in ngtcp2's buffer is never sent */
    struct qo_tx_batch b2 = {0};
    qo_offload_tx_begin(&o);
    qo_offload_encrypt(other + ohl, NULL, NULL, payload, sizeof(payload), nonce, sizeof(nonce),
                       other, ohl);
    qo_offload_tx_end(&o, &b2, dgram, len);
    qo_offload_protect(&o, &b2);
    ok(b2.n == 1 && !b2.ok[0], "a packet the seam cannot place is not sent");

    /* RX: libquicoff opens the datagram, then ngtcp2's null decrypt copies */
    uint8_t *dp = dgram;
    size_t dl = len;
    qo_offload_unprotect(&o, &dp, &dl, 1, CID);
    ok(dl == len && memcmp(dgram + hl, payload, sizeof(payload)) == 0,
       "unprotected in a burst: the payload is back");
    qo_offload_rx_begin(&o, dgram, dl, CID);
    uint8_t out[200];
    ok(qo_offload_hp_mask(mask, NULL, &hp_ctx, dgram + hl + 4) == 0 &&
           memcmp(mask, zeros, sizeof(mask)) == 0,
       "zero mask for the sample inside the opened packet");
    ok(qo_offload_decrypt(out, NULL, NULL, dgram + hl, sizeof(payload) + QUICOFF_TAG_LEN, nonce,
                          sizeof(nonce), dgram, hl) == 0 &&
           memcmp(out, payload, sizeof(payload)) == 0,
       "null decrypt copies the opened payload");
    uint8_t hdr2[64];
    memcpy(hdr2, dgram, hl);
    hdr2[hl - 1] ^= 1; /* another packet number than the one libquicoff opened */
    ok(qo_offload_decrypt(out, NULL, NULL, dgram + hl, sizeof(payload) + QUICOFF_TAG_LEN, nonce,
                          sizeof(nonce), hdr2, hl) == NGTCP2_ERR_DECRYPT,
       "null decrypt refuses a header libquicoff did not open");

    /* a tampered datagram is cut before its 1-RTT packet */
    qo_offload_tx_begin(&o);
    hl = short_header(dgram, cid.data, 0, (uint32_t)(pn + 1));
    memcpy(dgram + hl, payload, sizeof(payload));
    make_nonce(nonce, iv, pn + 1);
    qo_offload_encrypt(dgram + hl, NULL, NULL, dgram + hl, sizeof(payload), nonce, sizeof(nonce),
                       dgram, hl);
    qo_offload_hp_mask(mask, NULL, &hp_ctx, dgram + hl + 4);
    struct qo_tx_batch b3 = {0};
    qo_offload_tx_end(&o, &b3, dgram, len);
    qo_offload_protect(&o, &b3);
    dgram[hl + 10] ^= 1;
    dp = dgram;
    dl = len;
    qo_offload_unprotect(&o, &dp, &dl, 1, CID);
    ok(b3.ok[0] && dl == 0 && o.c.offload_rx_failures == 1,
       "a datagram failing authentication is dropped and counted");

    qo_offload_collect(&o);
    ok(o.c.offload_tx_packets == 2 && o.c.offload_rx_packets == 1, "libquicoff's counts");
    qo_offload_free(&o);
    printf("1..%d\n", count);
    return failures ? 1 : 0;
}
