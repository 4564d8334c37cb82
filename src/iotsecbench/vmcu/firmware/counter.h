/* The instruction counter of each virtual target. QEMU runs with -icount shift=0: its virtual
 * clock advances exactly one nanosecond per guest instruction, and every counter below is read
 * at an exact instruction boundary (icount ends the translation block at the read).
 *
 * - RV32 (qemu-system-riscv32 -M virt): minstret, the ISA's retired-instruction counter, which
 *   QEMU derives from the same count under -icount.
 * - Cortex-M4 (qemu-system-arm -M netduinoplus2, an STM32F405): the M profile has no
 *   retired-instruction counter (DWT's CYCCNT counts cycles and QEMU does not model it), so the
 *   STM32's 32-bit timer TIM2 counts instead: QEMU clocks it at 1 GHz of virtual time, which
 *   under -icount shift=0 is one tick per instruction. */
#ifndef VMCU_COUNTER_H
#define VMCU_COUNTER_H

#include <stdint.h>

#if defined(__riscv)
static inline void counter_start(void) {}
static inline uint32_t counter_read(void)
{
    uint32_t value;
    __asm__ volatile("csrr %0, minstret" : "=r"(value));
    return value;
}
#elif defined(__ARM_ARCH_7EM__)
#define VM_REG(address) (*(volatile uint32_t *)(address))
static inline void counter_start(void)
{
    VM_REG(0x40023840) |= 1;         /* RCC_APB1ENR: TIM2 clock on */
    VM_REG(0x40000028) = 0;          /* TIM2_PSC: no prescaler */
    VM_REG(0x4000002C) = 0xFFFFFFFF; /* TIM2_ARR: the full 32 bits */
    VM_REG(0x40000014) = 1;          /* TIM2_EGR: load PSC and ARR */
    VM_REG(0x40000000) = 1;          /* TIM2_CR1: count */
}
static inline uint32_t counter_read(void) { return VM_REG(0x40000024); /* TIM2_CNT */ }
#else
#error "no instruction counter for this target"
#endif

#endif
