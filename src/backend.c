/* SPDX-License-Identifier: Apache-2.0 */
/* Run-time choice of the crypto backend. */
#include "crypto.h"

#include <string.h>

/* Fastest first: "auto" takes the first one available on this CPU/build.
 * A new backend (e.g. "ipsec-mb") is one extern in crypto.h and one line here. */
static const qo_backend_t *const backends[] = {
#ifdef QUICOFF_HAVE_IPSECMB
    &qo_backend_ipsecmb_vaes, /* "ipsec-mb" with gcm_vaes.c's GCM, where the CPU has it */
    &qo_backend_ipsecmb,      /* x86-64 with AES-NI; see backend_ipsecmb.c */
#endif
    &qo_backend_openssl,
};

const qo_backend_t *qo_backend_find(const char *name)
{
    int any = name == NULL || strcmp(name, "auto") == 0;

    for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
        const qo_backend_t *b = backends[i];
        if ((any || strcmp(name, b->name) == 0) && b->available())
            return b;
    }
    return NULL;
}
