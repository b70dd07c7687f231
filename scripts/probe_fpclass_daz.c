/* Probe: does VFPCLASSPS obey MXCSR.DAZ on this CPU? (kern_wide_avx512.h's bf16 guard depends on it)
 *   gcc -O1 -mavx512f -mavx512dq -mavx512bf16 -mavx512vl scripts/probe_fpclass_daz.c -o /tmp/p && /tmp/p
 * AMD Zen 5 (family 26 model 2), 2026-12-02:
 *   DAZ off: denormal 0x7 zero 0xfff8 bf16 0
 *   DAZ on : denormal 0 zero 0xffff bf16 0
 * i.e. under DAZ the three subnormal lanes are classed as zeros, not denormals; vcvtneps2bf16
 * flushes them either way. The class is read in noinline functions so the compiler cannot move
 * it across the MXCSR writes. */
#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
__attribute__((noinline)) unsigned cls(const uint32_t *v, int which){
  __m512 x = _mm512_loadu_ps((const void*)v);
  __asm__ volatile("" ::: "memory");
  return which ? _mm512_fpclass_ps_mask(x,0x06) : _mm512_fpclass_ps_mask(x,0x20);
}
__attribute__((noinline)) unsigned bf(const uint32_t *v){
  __m512 x = _mm512_loadu_ps((const void*)v);
  __m256bh h = _mm512_cvtneps_pbh(x); uint16_t o[16]; memcpy(o,&h,32); return o[0]|(o[2]<<16);
}
int main(void){
  static uint32_t v[16]={0}; v[0]=1; v[1]=0x80000001u; v[2]=0x007fffffu;
  unsigned o=_mm_getcsr();
  printf("DAZ off: denormal %#x zero %#x bf16 %#x\n", cls(v,0), cls(v,1), bf(v));
  _mm_setcsr(o|0x40); __asm__ volatile("" ::: "memory");
  unsigned a=cls(v,0), b=cls(v,1), c=bf(v);
  _mm_setcsr(o);
  printf("DAZ on : denormal %#x zero %#x bf16 %#x\n", a,b,c);
  return 0;}
