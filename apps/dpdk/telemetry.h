/* SPDX-License-Identifier: Apache-2.0 */
/* DPDK telemetry endpoints of quicoff-dpdk (docs/dpdk.md "Telemetry"). */
#ifndef QD_TELEMETRY_H
#define QD_TELEMETRY_H

/* Registers /quicoff/stats, /quicoff/lcores, /quicoff/lcore, /quicoff/table,
 * /quicoff/connections, /quicoff/connection, /quicoff/options and
 * /quicoff/lookaside. Returns 0, or -1 when one could not be registered. */
int qd_telemetry_init(void);

#endif
