! fortran_chase.f90 -- a pointer chase built with gfortran's default flags
! (-fbacktrace: libgfortran installs its own handlers for SIGTRAP, SIGSEGV, SIGBUS,
! SIGILL, SIGFPE, SIGABRT, ... when the program starts, after the tracer's).
!
! Site by marker name (the ALLOCATE line ends with a SITE-colon-<name> comment):
!   chase   allocate(nxt(4194304)), integer(8)   33554432 bytes
! nxt is one random cycle (Fisher-Yates with a fixed xorshift seed); the loop follows
! it for STEPS steps (default 4000000; argument 1 overrides).
!
! Output: "chase <checksum>" and "ok", exit 0. With argument "abort": the chase of
! 200000 steps, then CALL ABORT (SIGABRT through libgfortran's handler, which prints
! a backtrace to stderr and re-raises).
program fortran_chase
  implicit none
  integer(8), allocatable :: nxt(:)
  integer(8) :: n, i, j, t, p, steps, s, rng
  character(len=32) :: arg
  logical :: do_abort

  n = 4194304_8
  steps = 4000000_8
  do_abort = .false.
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    if (trim(arg) == 'abort') then
      do_abort = .true.
      steps = 200000_8
    else
      read(arg, *) steps
    end if
  end if
  allocate(nxt(n)) ! SITE:chase
  do i = 1, n
    nxt(i) = i
  end do
  rng = 88172645463325252_8
  do i = n, 2, -1
    rng = ieor(rng, ishft(rng, 13))
    rng = ieor(rng, ishft(rng, -7))
    rng = ieor(rng, ishft(rng, 17))
    j = 1 + modulo(rng, i - 1)
    t = nxt(i)
    nxt(i) = nxt(j)
    nxt(j) = t
  end do
  p = 1
  s = 0
  do i = 1, steps
    p = nxt(p)
    s = s + p
  end do
  write(*, '(a,i0)') 'chase ', s
  flush(6)
  if (do_abort) call abort()
  deallocate(nxt)
  write(*, '(a)') 'ok'
end program fortran_chase
