! fortran_alloc.f90 -- Fortran ALLOCATE / DEALLOCATE (gfortran emits direct
! malloc/free calls from MAIN__).
!
! Sites by marker name (the ALLOCATE line ends with a SITE-colon-<name> comment):
!   real8   allocate(a(30000)), real(8)      240000 bytes
!   int4    allocate(b(90000)), integer(4)   360000 bytes
! Both are filled, summed and deallocated.
!
! Output: "ok", exit 0 (stop 1 on a wrong sum).
program fortran_alloc
  implicit none
  real(8), allocatable :: a(:)
  integer(4), allocatable :: b(:)
  integer :: i
  real(8) :: s
  integer(8) :: t

  allocate(a(30000)) ! SITE:real8
  allocate(b(90000)) ! SITE:int4
  do i = 1, 30000
    a(i) = real(i, 8)
  end do
  do i = 1, 90000
    b(i) = mod(i, 7)
  end do
  s = sum(a)
  t = sum(int(b, 8))
  deallocate(b)
  deallocate(a)
  if (abs(s - 450015000.0d0) > 0.5d0 .or. t /= 269998_8) then
    write(*, '(a)') 'bad sums'
    stop 1
  end if
  write(*, '(a)') 'ok'
end program fortran_alloc
