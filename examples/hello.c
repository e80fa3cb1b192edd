/* SPDX-License-Identifier: Apache-2.0 */
/* The smallest complete use of libquicoff: install one connection's 1-RTT
 * keys in both directions, protect a packet, unprotect it. Built and run by
 * the test suite, shown in the README. */
#include <quicoff/quicoff.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    /* A TLS traffic secret as the host's QUIC stack exports it (32 bytes for
     * the SHA-256 suites); key, IV, HP key and the next generation ("quic ku")
     * are derived inside. */
    uint8_t secret[32];
    memset(secret, 0x42, sizeof(secret));
    const uint8_t dcid[8] = {1, 2, 3, 4, 5, 6, 7, 8};

    struct quicoff_table_config tc = {.capacity = 1024, .local_cid_len = sizeof(dcid)};
    quicoff_status_t st;
    struct quicoff_table *table = quicoff_table_create(&tc, &st);
    if (!table) {
        fprintf(stderr, "table: %s\n", quicoff_status_name(st));
        return 1;
    }
    struct quicoff_worker *worker = quicoff_worker_create(table); /* one per data-plane thread */

    struct quicoff_conn_config cfg;
    quicoff_conn_config_init(&cfg);
    cfg.suite = QUICOFF_AES_128_GCM;
    cfg.secret = secret;
    cfg.secret_len = sizeof(secret);
    memcpy(cfg.dcid, dcid, sizeof(dcid));
    cfg.dcid_len = sizeof(dcid);
    quicoff_conn_t tx, rx;
    cfg.direction = QUICOFF_DIR_TX;
    quicoff_conn_add(table, &cfg, &tx);
    cfg.direction = QUICOFF_DIR_RX;
    quicoff_conn_add(table, &cfg, &rx);

    /* Short header: 0x40 | key phase 0 | PN length 2, DCID, PN 0x0007; then payload. */
    uint8_t buf[128] = {0x41, 1, 2, 3, 4, 5, 6, 7, 8, 0x00, 0x07};
    const char *msg = "hello, offload";
    memcpy(buf + 11, msg, strlen(msg));
    uint32_t len = 11 + (uint32_t)strlen(msg);

    struct quicoff_pkt pkt = {.data = buf, .end = len, .cap = sizeof(buf), .conn = tx, .pn = 7};
    struct quicoff_result res;
    quicoff_protect_burst(worker, &pkt, &res, 1);
    printf("protect:   %s, %u bytes on the wire\n", quicoff_status_name(res.status),
           res.packet_end);

    pkt = (struct quicoff_pkt){.data = buf, .end = res.packet_end};
    quicoff_unprotect_burst(worker, &pkt, &res, 1);
    printf("unprotect: %s, pn %llu, payload \"%.*s\"\n", quicoff_status_name(res.status),
           (unsigned long long)res.pn, (int)res.payload_len, (const char *)buf + res.payload_off);
    int ok = res.status == QUICOFF_OK && res.conn == rx && res.payload_len == strlen(msg) &&
             memcmp(buf + res.payload_off, msg, strlen(msg)) == 0;

    quicoff_worker_destroy(worker);
    quicoff_table_destroy(table); /* zeroes every key */
    return ok ? 0 : 1;
}
