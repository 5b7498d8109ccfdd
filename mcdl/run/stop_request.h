// A stop asked for from outside a run: Ctrl-C or SIGTERM (a batch scheduler's notice before its
// time limit). The training loops then end the step in progress, skip the epoch's evaluation, let
// the checkpoint being written finish, and return; the tools exit with 130 and say how to resume.
// The flag is a lock-free atomic: a signal handler may set it.
//
// In a run of several processes each rank may see the signal at another step, so there the flag
// that the loops read is the ranks' agreement, taken by agree_on_stop at each step's end: every
// rank stops after the same step.
#pragma once

#include "engine/collective.h"

namespace mcdl {

void request_stop();
bool stop_requested();
// Whether any rank has a request (an all-gather of one byte); from the first call with more than
// one rank, stop_requested() returns this agreement.
void agree_on_stop(Collective& world);
// Forgets a request (tests that interrupt a run in-process and then run another).
void clear_stop_request();

}  // namespace mcdl
