/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The application context (struct qd_app, qd.h): filled by main.c, read by
 * every other file. It lives apart from main.c so that reading it does not
 * make a file depend on the one that wires everything (tools/file_cycles.py
 * counts shared data as a dependency too).
 */
#include "qd.h"

struct qd_app qda;
