/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Datagrams of coalesced QUIC packets (RFC 9000 §12.2), many at once, in
 * rounds: round r unprotects the r-th packet of every datagram still going
 * as one burst, so datagrams of one packet each (the usual 1-RTT case) cost
 * one burst, and the coalesced packets of handshakes share bursts too.
 * Groups of 32 datagrams keep the walk's state on the stack: nothing
 * allocates. The unprotect itself is the burst call's, or the caller's
 * (quicoff_walk_datagrams: e.g. the split calls and a cryptodev).
 */
#include "table.h"

#include <string.h>

#define GROUP 32 /* datagrams walked together: one round is at most one burst chunk */

static bool all_zero(const uint8_t *p, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

unsigned quicoff_walk_datagrams(struct quicoff_datagram *dgs, unsigned n, unsigned flags,
                                quicoff_round_fn fn, void *arg)
{
    bool stop_at_failure = flags & QUICOFF_DATAGRAM_STOP_AT_FAILURE;
    unsigned ok = 0;
    for (unsigned base = 0; base < n; base += GROUP) {
        struct quicoff_datagram *d = dgs + base;
        unsigned m = n - base < GROUP ? n - base : GROUP, cnt = 0;
        uint32_t next_off[GROUP];
        unsigned todo[GROUP]; /* datagrams (index in dgs) with a packet in this round */
        for (unsigned i = 0; i < m; i++) {
            d[i].n_results = 0;
            d[i].n_ok = 0;
            next_off[i] = 0;
            if (d[i].len > 0 && d[i].max_results > 0 && d[i].res)
                todo[cnt++] = base + i;
        }
        while (cnt) {
            struct quicoff_pkt pkts[GROUP];
            struct quicoff_result res[GROUP];
            for (unsigned j = 0; j < cnt; j++) {
                const struct quicoff_datagram *g = &dgs[todo[j]];
                pkts[j] = (struct quicoff_pkt){.data = g->data,
                                               .end = g->len,
                                               .cap = g->len,
                                               .offset = next_off[todo[j] - base],
                                               .local_addr = g->local_addr};
            }
            fn(arg, pkts, res, todo, cnt);
            unsigned more = 0;
            for (unsigned j = 0; j < cnt; j++) {
                unsigned i = todo[j] - base;
                struct quicoff_datagram *g = &d[i];
                g->res[g->n_results++] = res[j];
                bool good = quicoff_status_ok(res[j].status);
                g->n_ok += good;
                ok += good;
                uint32_t end = res[j].packet_end;
                /* Zero bytes after the last packet are padding (§12.2); an
                 * extent that is unknown (malformed, unsupported) ends the walk. */
                if ((stop_at_failure && !good) || end <= next_off[i] || end >= g->len ||
                    g->n_results == g->max_results || all_zero(g->data + end, g->len - end))
                    continue;
                next_off[i] = end;
                todo[more++] = base + i;
            }
            cnt = more;
        }
    }
    return ok;
}

static void burst_round(void *w, struct quicoff_pkt *pkts, struct quicoff_result *res,
                        const unsigned *dgram, unsigned n)
{
    (void)dgram;
    quicoff_unprotect_burst(w, pkts, res, n);
}

unsigned quicoff_unprotect_datagrams(struct quicoff_worker *w, struct quicoff_datagram *dgs,
                                     unsigned n, unsigned flags)
{
    /* One read-side section for the whole walk: each round's burst then only
     * counts its nesting (quicoff_worker.open). */
    qo_worker_enter(w);
    unsigned ok = quicoff_walk_datagrams(dgs, n, flags, burst_round, w);
    qo_worker_exit(w);
    return ok;
}

unsigned quicoff_unprotect_datagram(struct quicoff_worker *w, uint8_t *data, uint32_t len,
                                    const struct quicoff_addr *local_addr,
                                    struct quicoff_result *res, unsigned max_results)
{
    struct quicoff_datagram d = {.data = data,
                                 .len = len,
                                 .local_addr = local_addr,
                                 .res = res,
                                 .max_results = max_results > UINT16_MAX ? UINT16_MAX
                                                                         : (uint16_t)max_results};
    quicoff_unprotect_datagrams(w, &d, 1, 0);
    return d.n_results;
}
