
5
c_int8Const*
valueB"þ*
dtype0
%
out_int8Identityc_int8*
T0
6
c_int16Const*
valueB:¬*
dtype0
'
	out_int16Identityc_int16*
T0
8
c_uint16Const*
valueB:ÿÿ*
dtype0
)

out_uint16Identityc_uint16*
T0"ª