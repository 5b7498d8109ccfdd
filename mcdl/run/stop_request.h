// A stop asked for from outside a run: Ctrl-C or SIGTERM (a batch scheduler's notice before its
// time limit). The training loops then end the step in progress, skip the epoch's evaluation, let
// the checkpoint being written finish, and return; the tools exit with 130 and say how to resume.
// The flag is a lock-free atomic: a signal handler may set it.
#pragma once

namespace mcdl {

void request_stop();
bool stop_requested();
// Forgets a request (tests that interrupt a run in-process and then run another).
void clear_stop_request();

}  // namespace mcdl
