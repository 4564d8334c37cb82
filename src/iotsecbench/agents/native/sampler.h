/* The 10 Hz sampler of measure/sampler.py: CPU, RSS and the connection's TCP_INFO counters,
 * on an absolute schedule (late wake-ups skip ticks, never burst). */
#ifndef IOTSB_SAMPLER_H
#define IOTSB_SAMPLER_H

void sampler_start(void);
void sampler_set_socket(int fd); /* -1: no connection (the last counters are held) */
void sampler_stop(void);         /* joins the thread, then takes one final sample */

#endif
