/* SPDX-License-Identifier: Apache-2.0 */
/* encap.c's parsers against every tag stack of up to five tags (any mix of the
 * QinQ TPIDs and a non-tag value), every inner EtherType of interest, and
 * every cut of those frames:
 *  - qd_eth_parse never reports an offset past the frame, never more than two
 *    tags, and never a tag TPID as the EtherType (the frame was not walked
 *    to its end: that is QD_ETH_DEEP);
 *  - an offload EtherType (0x88B5/0x88B6) present at any depth, behind tags
 *    or RFC 1042 SNAP, is either reported as such or the frame is DEEP/SHORT:
 *    never taken for something else (which the classifier would forward);
 *  - qd_ip_truncated holds exactly for IP frames cut short of their IP
 *    length. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encap.h"
#include "quicoff/wire.h"

struct qd_app qda; /* encap.c's builder reads it; the parsers do not */

static int failures;
static unsigned checks;

#define CHECK(c, ...)                \
    do {                             \
        checks++;                    \
        if (!(c)) {                  \
            failures++;              \
            if (failures < 20)       \
                printf(__VA_ARGS__); \
        }                            \
    } while (0)

static const uint16_t TPIDS[] = {0x8100, 0x88A8, 0x9100, 0x9200, 0x9300};
static const uint16_t INNER[] = {
    0x0800, 0x86DD, 0x0806, QUICOFF_WIRE_ETHERTYPE_SIGNAL, QUICOFF_WIRE_ETHERTYPE_DATA,
    0x0030 /* 802.3 + SNAP */};

static bool is_offload(uint16_t et)
{
    return et == QUICOFF_WIRE_ETHERTYPE_SIGNAL || et == QUICOFF_WIRE_ETHERTYPE_DATA;
}

/* Ethernet + tags + inner (with SNAP 88B5 when inner is an 802.3 length) +
 * 60 bytes. Returns the length. */
static uint32_t build(uint8_t *f, const uint16_t *tags, int n, uint16_t inner)
{
    uint32_t off = 12;
    memset(f, 0xab, 12);
    for (int i = 0; i < n; i++) {
        f[off] = (uint8_t)(tags[i] >> 8), f[off + 1] = (uint8_t)tags[i];
        f[off + 2] = 0x00, f[off + 3] = (uint8_t)(i + 1);
        off += 4;
    }
    f[off] = (uint8_t)(inner >> 8), f[off + 1] = (uint8_t)inner;
    off += 2;
    if (inner < 0x0600) {
        static const uint8_t snap[8] = {0xAA, 0xAA, 0x03, 0, 0, 0, 0x88, 0xB5};
        memcpy(f + off, snap, 8);
        off += 8;
    }
    memset(f + off, 0x45, 60);
    return off + 60;
}

static void check_frame(const uint8_t *f, uint32_t full, const uint16_t *tags, int n,
                        uint16_t inner)
{
    for (uint32_t len = 0; len <= full; len++) {
        uint16_t l2 = 0xdead, et = 0xbeef;
        /* a buffer of exactly len bytes: a sanitizer build sees any read past it */
        uint8_t *cut = malloc(len ? len : 1);
        memcpy(cut, f, len);
        enum qd_eth_result r = qd_eth_parse(cut, len, &l2, &et);
        free(cut);
        int ntags = 0; /* the leading tags: a non-tag value ends the stack */
        while (ntags < n && qd_is_tag_tpid(tags[ntags]))
            ntags++;
        if (r == QD_ETH_OK) {
            CHECK(l2 <= len && l2 >= 14 && (l2 - 14) % 4 == 0 && (l2 - 14) / 4 <= QD_MAX_VLANS,
                  "bad l2 %u (len %u, %d tags)\n", l2, len, n);
            CHECK(!qd_is_tag_tpid(et), "a TPID %#x reported as the EtherType\n", et);
            /* an offload EtherType in the frame, reachable through tags only */
            bool hidden = ntags == n && ntags <= QD_MAX_VLANS && is_offload(inner) &&
                          !is_offload(et);
            CHECK(!hidden, "0x%04x behind %d tags taken for %#x (len %u)\n", inner, n, et, len);
            CHECK(!(ntags > QD_MAX_VLANS), "%d tags walked as OK (len %u)\n", ntags, len);
            if (inner < 0x0600 && ntags == n && n <= QD_MAX_VLANS)
                CHECK(len < 12u + 4 * n + 2 + 8, "SNAP-wrapped 0x88B5 passed (len %u)\n", len);
        } else {
            CHECK(r == QD_ETH_SHORT || r == QD_ETH_DEEP, "result %d\n", r);
            if (r == QD_ETH_SHORT)
                CHECK(len < 14u + 4 * (ntags < 3 ? ntags : 2) + 2, "SHORT at len %u\n", len);
        }
    }
}

static void test_eth_parse(void)
{
    uint8_t f[256];
    uint16_t tags[5];
    /* every sequence of 0..5 tags from TPIDS plus 0x0800 (a non-tag: ends the stack) */
    for (int n = 0; n <= 5; n++) {
        unsigned combos = 1;
        for (int i = 0; i < n; i++)
            combos *= 6;
        for (unsigned c = 0; c < combos; c++) {
            unsigned x = c;
            for (int i = 0; i < n; i++, x /= 6)
                tags[i] = x % 6 == 5 ? 0x0800 : TPIDS[x % 6];
            for (size_t k = 0; k < sizeof(INNER) / sizeof(INNER[0]); k++) {
                uint32_t full = build(f, tags, n, INNER[k]);
                check_frame(f, full, tags, n, INNER[k]);
            }
        }
    }
}

static void test_ip_truncated(void)
{
    uint8_t f[256];
    memset(f, 0, sizeof(f));
    f[12] = 0x08, f[13] = 0x00;
    f[14] = 0x45, f[16] = 0x00, f[17] = 100; /* IPv4, total length 100 */
    for (uint32_t len = 14; len <= 14 + 120; len++)
        CHECK(qd_ip_truncated(f, len, len, 14, 0x0800) == (len < 114), "IPv4 of 100 in %u bytes\n",
              len);
    f[12] = 0x86, f[13] = 0xdd;
    f[14] = 0x60, f[18] = 0x00, f[19] = 60; /* IPv6, payload 60: 100 bytes */
    for (uint32_t len = 14; len <= 14 + 120; len++)
        CHECK(qd_ip_truncated(f, len, len, 14, 0x86DD) == (len < 114), "IPv6 of 100 in %u bytes\n",
              len);
    /* a multi-segment frame: the first segment holds the header, the whole the packet */
    CHECK(!qd_ip_truncated(f, 60, 114, 14, 0x86DD), "multi-segment taken for cut\n");
    /* not IP: never "cut" */
    CHECK(!qd_ip_truncated(f, 20, 20, 14, 0x0806), "ARP taken for cut\n");
    f[14] = 0x45; /* the version disagrees with the EtherType */
    CHECK(!qd_ip_truncated(f, 114, 114, 14, 0x86DD), "IPv4 bytes under 0x86DD taken for cut\n");
}

int main(void)
{
    test_eth_parse();
    test_ip_truncated();
    printf("%u checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
