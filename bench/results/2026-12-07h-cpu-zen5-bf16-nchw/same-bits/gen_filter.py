import numpy as np, json, os, sys
rng=np.random.default_rng(23)
root=sys.argv[2]
cases=[]
# (n, h, w, ci, co, kh, kw, stride, dil, pad, groups, layout, inf)
base=[
 (2,14,14,64,64,3,3,1,1,'SAME',1,0),
 (2,13,17,30,32,3,3,2,1,'SAME',1,0),
 (1,20,21,13,48,5,5,1,1,'VALID',1,0),
 (1,20,22,12,64,3,3,1,2,'SAME',1,0),
 (1,15,16,20,64,3,3,2,2,[[1,2],[2,1]],2,0),
 (1,9,40,64,128,2,2,1,1,'VALID',1,0),
 (2,17,19,3,32,7,7,2,1,'SAME',1,0),
 (1,11,13,3,16,3,3,1,1,'SAME',1,1),
 (2,14,14,64,64,3,3,1,1,'SAME',1,1),
 (2,13,15,32,32,3,3,2,1,'SAME',1,1),
]
confs=[c[:11]+(lay,c[11]) for lay in ['NCHW','NHWC'] for c in base]
for i,(n,h,w,ci,co,kh,kw,s,d,pad,g,lay,inf) in enumerate(confs):
    def out(inp,k,st,dl,p0,p1): return (inp+p0+p1-dl*(k-1)-1)//st+1
    if pad=='SAME': oh,ow=-(-h//s),-(-w//s)
    elif pad=='VALID': oh,ow=out(h,kh,s,d,0,0),out(w,kw,s,d,0,0)
    else: oh,ow=out(h,kh,s,d,*pad[0]),out(w,kw,s,d,*pad[1])
    x=rng.standard_normal((n,h,w,ci)).astype(np.float32)
    dy=(rng.standard_normal((n,oh,ow,co))*np.exp(3*rng.standard_normal((n,oh,ow,co)))).astype(np.float32)
    if inf:
        x[0,3,w-1,ci-1]=np.inf; x[n-1,5,w-1,2]=-np.inf; dy[0,2,ow-1,7]=np.inf; x[n-1,2,0,1]=np.nan
    if lay=='NCHW': x=x.transpose(0,3,1,2).copy(); dy=dy.transpose(0,3,1,2).copy()
    dname=f'{root}/c{i}'; os.makedirs(dname,exist_ok=True)
    np.save(f'{dname}/x.npy',x); np.save(f'{dname}/dy.npy',dy)
    json.dump({"op":"conv2d_backprop_filter","layout":lay,"dtype":"bf16",
      "attrs":{"filter_shape":[kh,kw,ci//g,co],"strides":[s,s],"padding":pad,"dilations":[d,d]},
      "inputs":{"x":"x.npy","dy":"dy.npy"},"output":sys.argv[1]},open(f'{dname}/case.json','w'))
    if g>1:
        c=json.load(open(f'{dname}/case.json')); c['attrs']['groups']=g; json.dump(c,open(f'{dname}/case.json','w'))
