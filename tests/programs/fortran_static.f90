! fortran_static.f90 -- hot static arrays of a Fortran code: a module array and a
! COMMON block, both in .bss (gfortran names them __grid_mod_MOD_field and work_).
!
! Statics by marker name (the declaration line ends with a STATIC-colon-<name>
! comment):
!   field   real(8) module array (2097152)   16777216 bytes: read at random (hot)
!   work    COMMON /work/ table(1048576)      8388608 bytes: incremented at random
! No allocation of its own.
!
! Usage: fortran_static [ROUNDS] (default 8). Each round draws 2097152 random indices
! (xorshift, fixed seed), sums field at each and counts it into table.
! Output: "fortran_static <sum> <count>" (the same for every run with the same
! ROUNDS), then "ok", exit 0.
module grid_mod
  implicit none
  integer(8), parameter :: n = 2097152_8
  real(8) :: field(n) ! STATIC:field
end module grid_mod

program fortran_static
  use grid_mod
  implicit none
  integer(8), parameter :: m = 1048576_8
  real(8) :: table(m)
  common /work/ table ! STATIC:work
  integer(8) :: i, r, rounds, j, rng
  real(8) :: s
  character(len=32) :: arg

  rounds = 8
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read(arg, *) rounds
  end if
  do i = 1, n
    field(i) = real(mod(i, 1000_8), 8)
  end do
  table = 0
  rng = 88172645463325252_8
  s = 0
  do r = 1, rounds
    do i = 1, n
      rng = ieor(rng, ishft(rng, 13))
      rng = ieor(rng, ishft(rng, -7))
      rng = ieor(rng, ishft(rng, 17))
      j = 1 + modulo(rng, n)
      s = s + field(j)
      table(1 + modulo(j, m)) = table(1 + modulo(j, m)) + 1
    end do
  end do
  write(*, '(a,f0.1,1x,f0.1)') 'fortran_static ', s, sum(table)
  print '(a)', 'ok'
end program fortran_static
